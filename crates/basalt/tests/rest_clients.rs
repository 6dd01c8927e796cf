//! HBase's REST gateway driven by the clients its users run: hbase-rest-py 1.0.0 and
//! starbase 0.3.3, their own test suites unchanged but for the server's address, against a
//! real `basalt server` and through a `basalt rest --server` gateway process; and every
//! resource and representation with `requests` (`tests/rest/test_rest.py`). The Python side
//! lives in `tests/rest/`; these tests make its environment (a venv with the pinned
//! clients, from PyPI) and run it.

mod python;

use python::REST;

#[test]
fn hbase_rest_py_own_suite_passes() {
    REST.python(&["upstream.py", "hbase-rest-py", &REST.sdists()]);
}

#[test]
fn hbase_rest_py_own_suite_passes_through_a_gateway_process() {
    REST.python(&["upstream.py", "hbase-rest-py", &REST.sdists(), "--gateway"]);
}

#[test]
fn starbase_own_suite_passes() {
    REST.python(&["upstream.py", "starbase", &REST.sdists()]);
}

#[test]
fn every_resource_and_representation_behaves_as_hbase_2_6() {
    REST.python(&[
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "test_rest.py",
    ]);
}
