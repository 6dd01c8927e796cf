//! `basalt shell`: the HBase shell in a terminal, or on a script or stdin.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use anyhow::Context;
use basalt_api::Connection;
use basalt_node::Database;
use basalt_shell::{ScriptEnd, Shell};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Editor, Helper};

/// What the shell talks to.
#[derive(Debug)]
pub enum Target {
    /// A server at `host:port`.
    Server(String),
    /// A data directory opened in this process.
    DataDir(PathBuf),
}

/// Runs the shell: a script file, or stdin when it is not a terminal or `-n` is given, or
/// else interactively. Returns the process exit code.
///
/// # Errors
/// The server cannot be reached, the data directory cannot be opened (in use by a server,
/// say), or the script read.
pub fn run(target: &Target, noninteractive: bool, script: Option<&Path>) -> anyhow::Result<i32> {
    match target {
        Target::Server(addr) => {
            let conn = basalt_client::blocking::Connection::connect(addr)
                .with_context(|| format!("connecting to the server at {addr}"))?;
            run_on(&conn, noninteractive, script)
        }
        Target::DataDir(dir) => {
            let db = Database::open(dir)
                .with_context(|| format!("opening the data directory {}", dir.display()))?;
            let code = run_on(&db, noninteractive, script)?;
            db.close()?;
            Ok(code)
        }
    }
}

fn run_on(
    conn: &dyn Connection,
    noninteractive: bool,
    script: Option<&Path>,
) -> anyhow::Result<i32> {
    let stdin_is_tty = std::io::stdin().is_terminal();
    let source = match script {
        Some(path) => Some(
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        ),
        None if noninteractive || !stdin_is_tty => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            Some(s)
        }
        None => None,
    };
    match source {
        Some(src) => {
            // Scripted use stops at the first error, with a non-zero exit code.
            let mut sh = Shell::new(conn, Box::new(std::io::stdout()));
            Ok(match sh.run_script(&src, true)? {
                ScriptEnd::Failed => 1,
                ScriptEnd::Done => 0,
            })
        }
        None => interactive(conn),
    }
}

fn interactive(conn: &dyn Connection) -> anyhow::Result<i32> {
    let mut sh = Shell::new(conn, Box::new(std::io::stdout()));
    sh.echo = true;
    sh.formatter.width = terminal_size::terminal_size().map_or(0, |(w, _)| usize::from(w.0));
    println!("HBase Shell");
    println!("Use \"help\" to get list of supported commands.");
    println!("Use \"exit\" to quit this interactive shell.");
    println!(
        "Version Basalt {}, HBase 2.5 compatible",
        env!("CARGO_PKG_VERSION")
    );
    let mut rl: Editor<ShellHelper<'_>, rustyline::history::FileHistory> = Editor::new()?;
    rl.set_helper(Some(ShellHelper { conn }));
    let history = std::env::var_os("HOME").map(|h| Path::new(&h).join(".basalt_shell_history"));
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    let mut n = 1;
    loop {
        match rl.readline(&format!("hbase:{n:03}:0> ")) {
            Ok(line) => {
                if line.trim().is_empty() {
                    continue;
                }
                let _ = rl.add_history_entry(line.as_str());
                n += 1;
                let trimmed = line.trim();
                if trimmed == "exit" || trimmed == "quit" {
                    break;
                }
                sh.run_script(&line, false)?;
            }
            Err(ReadlineError::Interrupted) => {}
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    Ok(0)
}

/// Tab completion of command names and, inside quotes, table names; multi-line statements.
struct ShellHelper<'a> {
    conn: &'a dyn Connection,
}

impl Completer for ShellHelper<'_> {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let head = &line[..pos];
        let start = head
            .rfind(|c: char| c.is_whitespace() || c == '\'' || c == '"' || c == ',')
            .map_or(0, |i| i + 1);
        let word = &head[start..];
        let quoted = head[..start].ends_with(['\'', '"']);
        let candidates: Vec<String> = if quoted {
            self.conn.admin().list_tables(None).unwrap_or_default()
        } else if start == 0 {
            Shell::command_names()
                .into_iter()
                .map(str::to_owned)
                .collect()
        } else {
            Vec::new()
        };
        let pairs = candidates
            .into_iter()
            .filter(|c| c.starts_with(word))
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for ShellHelper<'_> {
    type Hint = String;
}

impl Highlighter for ShellHelper<'_> {}

impl Validator for ShellHelper<'_> {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        if basalt_shell::parser::is_incomplete(ctx.input()) {
            return Ok(ValidationResult::Incomplete);
        }
        Ok(ValidationResult::Valid(None))
    }
}

impl Helper for ShellHelper<'_> {}
