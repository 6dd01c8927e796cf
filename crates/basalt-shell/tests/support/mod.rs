//! Running scripts against an embedded database and comparing output.
#![allow(dead_code)] // each test file uses part of it

use std::sync::Arc;

use basalt_node::env::{Env, ManualClock};
use basalt_node::{Database, Options};
use basalt_shell::{ScriptEnd, Shell};

pub const T0: i64 = 1_700_000_000_000;

pub struct Run {
    pub out: String,
    pub end: ScriptEnd,
}

pub fn run_on(db: &Database, script: &str) -> Run {
    let buf = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let end = {
        let sink = SharedBuf(std::rc::Rc::clone(&buf));
        let mut sh = Shell::new(db, Box::new(sink));
        sh.run_script(script, true).unwrap()
    };
    let text = String::from_utf8(buf.borrow().clone()).unwrap();
    let out = text
        .lines()
        .map(|l| {
            if l.starts_with("Took ") && l.ends_with(" seconds") {
                "Took X seconds".to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    Run { out, end }
}

struct SharedBuf(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

impl std::io::Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub fn db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let options = Options {
        env: Env::with_clock(clock),
        ..Options::default()
    };
    let db = Database::open_with(dir.path(), options).unwrap();
    (dir, db)
}

/// Expected output, written `|text` per line so leading spaces show; `{tN}` stands for
/// timestamp N as the shell prints it (a local date-time), `{now}` for the clock's time.
pub fn lines(s: &str) -> String {
    let text = s
        .lines()
        .map(|l| l.trim_start().strip_prefix('|').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = text;
    out = out.replace("{now}", &basalt_shell::format::local_date_time(T0));
    out = out.replace("{now+1}", &basalt_shell::format::local_date_time(T0 + 1));
    for ts in [1, 2, 3, 5, 6, 8, 9] {
        out = out.replace(
            &format!("{{t{ts}}}"),
            &basalt_shell::format::local_date_time(ts),
        );
    }
    out
}
