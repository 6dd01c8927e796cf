//! The Python environments of the tests that drive the server with the clients its users
//! run: a venv per directory of Python tests (`tests/thrift/`: happybase, aiohappybase;
//! `tests/bigtable/`: google-cloud-bigtable; `tests/rest/`: hbase-rest-py, starbase), with that directory's pinned packages from
//! PyPI, made once per build directory, and the scripts there run in it.

#![allow(dead_code)] // each test binary uses part of it

use std::path::{Path, PathBuf};
use std::process::Command;

/// One directory of Python tests under `tests/`, with its `requirements.txt` and, when it
/// runs clients' own tests from their source distributions, `sdists.txt`.
#[derive(Debug)]
pub struct Suite {
    dir: &'static str,
}

/// The Thrift gateway's client tests.
pub const THRIFT: Suite = Suite { dir: "thrift" };

/// The Bigtable gateway's client tests.
pub const BIGTABLE: Suite = Suite { dir: "bigtable" };

/// The REST gateway's client tests.
pub const REST: Suite = Suite { dir: "rest" };

impl Suite {
    /// Where the Python side of the tests lives.
    pub fn here(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(self.dir)
    }

    /// The venv the Python tests run in, made once (by whichever test gets there first).
    pub fn venv(&self) -> PathBuf {
        let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{}-venv", self.dir));
        let status = Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/setup_env.py"))
            .arg(self.here())
            .arg(&venv)
            .status()
            .expect("python3 is needed for the Python client tests");
        assert!(
            status.success(),
            "making the Python environment of tests/{} failed (it needs python3 with venv, and PyPI)",
            self.dir
        );
        venv
    }

    /// The directory of the clients' source distributions (their own test modules ship
    /// there).
    pub fn sdists(&self) -> String {
        let dir = self.venv().join("sdists");
        dir.to_str().expect("utf-8 path").to_owned()
    }

    /// Runs `args` with the venv's Python in the suite's directory, against this build's
    /// `basalt`; panics unless it succeeds.
    pub fn python(&self, args: &[&str]) {
        let venv = self.venv();
        let status = Command::new(venv.join("bin/python"))
            .args(args)
            .current_dir(self.here())
            .env("BASALT_BIN", env!("CARGO_BIN_EXE_basalt"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .status()
            .expect("running the venv's python");
        assert!(
            status.success(),
            "python {args:?} failed; its output is above"
        );
    }
}

/// [`THRIFT`]'s directory.
pub fn here() -> PathBuf {
    THRIFT.here()
}

/// [`THRIFT`]'s venv.
pub fn venv() -> PathBuf {
    THRIFT.venv()
}

/// [`THRIFT`]'s source distributions.
pub fn sdists() -> String {
    THRIFT.sdists()
}

/// Runs `args` with [`THRIFT`]'s Python; panics unless it succeeds.
pub fn python(args: &[&str]) {
    THRIFT.python(args);
}
