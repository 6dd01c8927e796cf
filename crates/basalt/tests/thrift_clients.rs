//! The HBase Thrift gateway driven by the Python clients its users run: happybase 1.3.0 and
//! aiohappybase 1.4.0 over buffered and framed transports, binary and compact protocols,
//! against real `basalt server` processes, and through a `basalt thrift --server` gateway
//! process in front of one. The Python side lives in `tests/thrift/`; these
//! tests make its environment (a venv with the pinned clients, from PyPI) and run it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/thrift")
}

/// The venv the Python tests run in, made once (by whichever test gets there first).
fn venv() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("thrift-venv");
    let status = Command::new("python3")
        .arg(here().join("setup_env.py"))
        .arg(&venv)
        .status()
        .expect("python3 is needed for the Thrift client tests");
    assert!(
        status.success(),
        "making the Python environment failed (it needs python3 with venv, and PyPI)"
    );
    venv
}

/// Runs `args` with the venv's Python, against this build's `basalt`; panics unless it
/// succeeds.
fn python(args: &[&str]) {
    let venv = venv();
    let status = Command::new(venv.join("bin/python"))
        .args(args)
        .current_dir(here())
        .env("BASALT_BIN", env!("CARGO_BIN_EXE_basalt"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .status()
        .expect("running the venv's python");
    assert!(
        status.success(),
        "python {args:?} failed; its output is above"
    );
}

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
    let sdists = venv().join("sdists");
    python(&[
        "upstream.py",
        "happybase",
        sdists.to_str().expect("utf-8 path"),
    ]);
}

/// The same module through `basalt thrift --server`, a gateway process of its own in front
/// of the server's native API, as HBase runs its Thrift server beside a cluster.
#[test]
fn happybase_own_test_module_passes_through_a_gateway_process() {
    let sdists = venv().join("sdists");
    python(&[
        "upstream.py",
        "happybase",
        sdists.to_str().expect("utf-8 path"),
        "--gateway",
    ]);
}

#[test]
fn aiohappybase_own_test_modules_pass() {
    let sdists = venv().join("sdists");
    python(&[
        "upstream.py",
        "aiohappybase",
        sdists.to_str().expect("utf-8 path"),
    ]);
}
