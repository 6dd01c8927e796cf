//! The Python environment of the tests that drive the Thrift gateway with the clients its
//! users run (happybase, aiohappybase): a venv with the pinned clients from PyPI, made once
//! per build directory, and the scripts in `tests/thrift/` run in it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the Python side of the tests lives.
pub fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/thrift")
}

/// The venv the Python tests run in, made once (by whichever test gets there first).
pub fn venv() -> PathBuf {
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

/// The directory of the clients' source distributions (their own test modules ship there).
pub fn sdists() -> String {
    let dir = venv().join("sdists");
    dir.to_str().expect("utf-8 path").to_owned()
}

/// Runs `args` with the venv's Python, against this build's `basalt`; panics unless it
/// succeeds.
pub fn python(args: &[&str]) {
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
