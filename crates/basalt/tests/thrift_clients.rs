//! The HBase Thrift gateway driven by the Python clients its users run: happybase 1.3.0 and
//! aiohappybase 1.4.0 over buffered and framed transports, binary and compact protocols,
//! against real `basalt server` processes, and through a `basalt thrift --server` gateway
//! process in front of one. The Python side lives in `tests/thrift/`; these
//! tests make its environment (a venv with the pinned clients, from PyPI) and run it.

mod python;

use python::{python, sdists};

/// Runs one of the Python test modules here with pytest.
fn pytest(module: &str) {
    python(&["-m", "pytest", "-q", "-p", "no:cacheprovider", module]);
}

#[test]
fn every_happybase_api_with_every_transport_and_protocol() {
    pytest("test_happybase.py");
}

#[test]
fn load_disconnects_and_bad_frames_leave_the_server_healthy_and_the_data_exact() {
    pytest("test_load.py");
}

#[test]
fn happybase_own_test_module_passes() {
    python(&["upstream.py", "happybase", &sdists()]);
}

/// The same module through `basalt thrift --server`, a gateway process of its own in front
/// of the server's native API, as HBase runs its Thrift server beside a cluster.
#[test]
fn happybase_own_test_module_passes_through_a_gateway_process() {
    python(&["upstream.py", "happybase", &sdists(), "--gateway"]);
}

#[test]
fn aiohappybase_own_test_modules_pass() {
    python(&["upstream.py", "aiohappybase", &sdists()]);
}
