//! Stopping the processes the end-to-end tests start.

use std::process::{Child, Command};

/// SIGTERM to `child`; it must then end cleanly (exit code 0), as a stopped server does.
pub fn terminate(child: &mut Child, what: &str) {
    let pid = child.id().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(sent.is_ok_and(|s| s.success()), "signalling {what}");
    let status = child.wait().expect("waiting for the process");
    assert!(status.success(), "{what} exited with {status}");
}
