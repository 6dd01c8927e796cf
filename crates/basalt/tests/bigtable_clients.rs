//! The Bigtable gateway driven by Google's own client and its official system tests: the
//! tests of python-bigtable (google-cloud-bigtable 2.50.2, from its source distribution on
//! PyPI) in emulator mode, against a real `basalt server`. Every test that is not skipped
//! must pass, and as many must pass and skip as against Google's emulator. The Python side
//! lives in `tests/bigtable/` (see `upstream.py` there); these tests make its environment (a
//! venv with the pinned client, from PyPI) and run it, one group of test modules each.

mod python;

use python::BIGTABLE;

/// Runs one group of the suite (`upstream.py` names them) against a server of its own.
fn upstream(group: &str) {
    BIGTABLE.python(&["upstream.py", group, &BIGTABLE.sdists()]);
}

/// tests/system/data/: the data client, async and sync (its metrics modules skip
/// themselves in emulator mode).
#[test]
fn data_client_system_tests_pass() {
    upstream("data");
}

/// tests/system/v2_client/test_data_api.py: the classic client's data API.
#[test]
fn classic_client_data_api_system_tests_pass() {
    upstream("v2_data_api");
}

/// tests/system/v2_client/test_table_admin.py: the classic client's table admin API.
#[test]
fn classic_client_table_admin_system_tests_pass() {
    upstream("v2_table_admin");
}
