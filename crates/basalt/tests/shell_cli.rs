//! `basalt shell` as a process: scripts, stdin, exit codes, and the data directory lock.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod common;

use std::io::Write;

use common::masked;
use std::process::{Command, Stdio};

fn basalt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_basalt"))
}

/// `basalt shell -n` on `data` with `script` piped in.
fn piped_shell(data: &std::path::Path, script: &str) -> std::process::Output {
    let mut child = basalt()
        .args(["shell", "-n", "--data-dir"])
        .arg(data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_script_runs_and_its_first_error_gives_a_non_zero_exit() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.hb");
    std::fs::write(
        &script,
        "create 't1', 'f1'\nput 't1', 'r1', 'f1:a', 'v1'\ncount 't1'\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let out = basalt()
        .args(["shell", "--data-dir"])
        .arg(&data)
        .arg(&script)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", masked(&out.stderr));
    assert_eq!(
        masked(&out.stdout),
        "Created table t1\nTook X seconds\nTook X seconds\n1 row(s)\nTook X seconds"
    );
    // Piped in: the first error stops the run with exit code 1; what follows does not run.
    let out = piped_shell(&data, "create 't1', 'f1'\ncreate 't2', 'f1'\n");
    assert_eq!(out.status.code(), Some(1));
    let text = masked(&out.stdout);
    assert!(
        text.starts_with("ERROR: Table already exists: t1!"),
        "{text}"
    );
    assert!(!text.contains("Created table t2"), "{text}");
}

#[test]
fn a_directory_in_use_is_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let db = basalt_node::Database::open(dir.path()).unwrap();
    let out = basalt()
        .args(["shell", "-n", "--data-dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is in use by another process"), "{err}");
    drop(db);
}

/// `basalt hbck` as an operator runs it: a report, exit code 1 while something is wrong,
/// a repair on request, exit code 0 after it; refused while the directory is in use.
#[test]
fn hbck_reports_repairs_and_exits_by_what_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = piped_shell(
        &data,
        "create 't1', 'f1'\nput 't1', 'r1', 'f1:a', 'v1'\nflush 't1'\n",
    );
    assert!(
        out.status.success(),
        "{}{}",
        masked(&out.stdout),
        masked(&out.stderr)
    );
    let hbck = |extra: &[&str]| {
        basalt()
            .args(["hbck", "--data-dir"])
            .arg(&data)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = hbck(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", masked(&out.stdout));
    for f in std::fs::read_dir(data.join("catalog")).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    let out = hbck(&[]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("ERROR MISSING_CATALOG"), "{text}");
    assert!(text.contains("1 remaining"), "{text}");
    let out = hbck(&["--fix-catalog"]);
    assert_eq!(out.status.code(), Some(0), "{}", masked(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("REPAIRED MISSING_CATALOG"));
    let out = piped_shell(&data, "count 't1'\n");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 row(s)"),
        "{}",
        masked(&out.stdout)
    );
}

/// RELIABILITY.md D3: a region that failed to open shows in `status` and `list_regions`.
#[test]
fn status_and_list_regions_show_a_region_that_failed_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let run = |script: &str| {
        let out = piped_shell(&data, script);
        assert!(out.status.success(), "{}", masked(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run("create 't1', 'f1', SPLITS => ['m']\nput 't1', 'z', 'f1:a', 'v'\nflush 't1'\n");
    // Every region directory but the first (in key order, the first has the lower id).
    let tdir = data.join("data/default/t1");
    let mut ids: Vec<u64> = std::fs::read_dir(&tdir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_string_lossy().parse().ok())
        .collect();
    ids.sort_unstable();
    let rdir = tdir.join(ids[1].to_string());
    for f in std::fs::read_dir(&rdir).unwrap() {
        let p = f.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("MANIFEST-")
        {
            std::fs::remove_file(p).unwrap();
        }
    }
    let out = run("status\nlist_regions 't1'\n");
    assert!(out.contains("1 regions in FAILED_OPEN"), "{out}");
    assert!(out.contains("no manifest"), "{out}");
    assert!(out.contains("FAILED_OPEN |"), "{out}");
}

/// The committed statement corpus (`fuzz/corpus/shell_statement`) run by the shell as a
/// process: each script ends with exit code 0 or 1, never a crash (RELIABILITY.md D17).
#[test]
fn the_statement_corpus_never_crashes_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let corpus =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/shell_statement");
    let mut n = 0;
    for entry in std::fs::read_dir(&corpus).unwrap() {
        let script = entry.unwrap().path();
        let out = basalt()
            .args(["shell", "--data-dir"])
            .arg(&data)
            .arg(&script)
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}: {:?}\n{}",
            script.display(),
            out.status,
            masked(&out.stderr)
        );
        n += 1;
    }
    assert!(n >= 10);
}
