//! The HBase shell: its language, its commands and its output, over any
//! [`basalt_api::Connection`] (an embedded database, or a server through the client). A library, so that every command's
//! exact output is testable; `basalt shell` wraps it in a terminal.
//!
//! Output follows HBase 2.x's shell (SEMANTICS.md §2.3): `Took N seconds` after each
//! command, `ERROR: ...` and `For usage try 'help "cmd"'` after a failure, the two-column
//! layout of formatter.rb, values through `Bytes.toStringBinary`.

#![allow(clippy::missing_errors_doc)] // commands document their HBase behaviour instead

pub mod args;
mod commands;
pub mod format;
mod help;
pub mod parser;

use std::collections::HashMap;
use std::io::Write;
use std::time::Instant;

use std::sync::Arc;

use basalt_api::{Admin, Connection, Table};
use basalt_model::{Error, TableName};

use format::Formatter;
use parser::{Statement, Value};

/// Why a command failed.
#[derive(Debug)]
pub enum ShellError {
    /// The database refused.
    Model(Error),
    /// The command was used wrongly.
    Usage(String),
}

impl ShellError {
    pub fn usage(msg: impl Into<String>) -> ShellError {
        ShellError::Usage(msg.into())
    }
}

impl From<Error> for ShellError {
    fn from(e: Error) -> Self {
        ShellError::Model(e)
    }
}

impl From<std::io::Error> for ShellError {
    fn from(e: std::io::Error) -> Self {
        ShellError::Model(Error::io("writing the output", e))
    }
}

/// What a statement produced besides its output: a value for `=>` echo and assignment.
#[derive(Clone, Debug, PartialEq)]
pub enum Returned {
    Nothing,
    /// `Hbase::Table - t1`.
    Table(TableName),
    /// A value printed as Ruby's `inspect` would.
    Value(String),
}

/// A shell session: its variables, its output and how it prints.
pub struct Shell<'a> {
    conn: &'a dyn Connection,
    out: Box<dyn Write + 'a>,
    pub formatter: Formatter,
    /// Interactive sessions echo each statement's value (`=> ...`), as IRB does.
    pub echo: bool,
    vars: HashMap<String, TableName>,
}

impl std::fmt::Debug for Shell<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shell")
            .field("echo", &self.echo)
            .finish_non_exhaustive()
    }
}

/// The outcome of running a script.
#[derive(Debug, PartialEq, Eq)]
pub enum ScriptEnd {
    /// Every statement ran (or `exit` was called).
    Done,
    /// A statement failed; the script stopped there.
    Failed,
}

impl<'a> Shell<'a> {
    /// A session over `conn` writing to `out`, without a terminal (no padding, no echo).
    pub fn new(conn: &'a dyn Connection, out: Box<dyn Write + 'a>) -> Shell<'a> {
        Shell {
            conn,
            out,
            formatter: Formatter {
                width: 0,
                epoch_timestamps: false,
            },
            echo: false,
            vars: HashMap::new(),
        }
    }

    /// Runs every statement of `src`. With `stop_on_error` the first failure ends the run
    /// (non-interactive use); otherwise it is reported and the next statement runs.
    pub fn run_script(&mut self, src: &str, stop_on_error: bool) -> std::io::Result<ScriptEnd> {
        let statements = match parser::parse(src) {
            Ok(s) => s,
            Err(e) => {
                writeln!(self.out, "SyntaxError: {e}")?;
                return Ok(ScriptEnd::Failed);
            }
        };
        let mut failed = false;
        for st in statements {
            if st.command == "exit" || st.command == "quit" {
                break;
            }
            if !self.run_statement(&st)? {
                failed = true;
                if stop_on_error {
                    break;
                }
            }
        }
        self.out.flush()?;
        Ok(if failed {
            ScriptEnd::Failed
        } else {
            ScriptEnd::Done
        })
    }

    /// Runs one statement and prints its output; false when it failed.
    pub fn run_statement(&mut self, st: &Statement) -> std::io::Result<bool> {
        let start = Instant::now();
        let mut args = st.args.clone();
        // `t.put 'r', ...` is `put 't', 'r', ...` on the table `t` refers to.
        if let Some(var) = &st.receiver {
            let Some(table) = self.vars.get(var).cloned() else {
                writeln!(
                    self.out,
                    "NameError: undefined local variable or method `{var}'"
                )?;
                return Ok(false);
            };
            args.insert(0, Value::Str(table.to_string().into_bytes()));
        }
        let Some(run) = commands::find(&st.command) else {
            writeln!(
                self.out,
                "NameError: undefined local variable or method `{}' for main:Object",
                st.command
            )?;
            return Ok(false);
        };
        let result = run(self, args::Args::new(args));
        let secs = start.elapsed().as_secs_f64();
        match result {
            Ok(returned) => {
                if run_prints_took(&st.command) {
                    writeln!(self.out, "{}", format::took(secs))?;
                }
                if let (Some(var), Returned::Table(t)) = (&st.assign, &returned) {
                    self.vars.insert(var.clone(), t.clone());
                }
                self.echo_value(&returned)?;
                Ok(true)
            }
            Err(e) => {
                let msg = self.error_message(&st.command, e);
                writeln!(self.out, "ERROR: {msg}\n")?;
                writeln!(self.out, "For usage try 'help \"{}\"'\n", st.command)?;
                writeln!(self.out, "{}", format::took(secs))?;
                Ok(false)
            }
        }
    }

    fn echo_value(&mut self, r: &Returned) -> std::io::Result<()> {
        if !self.echo {
            return Ok(());
        }
        match r {
            Returned::Nothing => writeln!(self.out, "=> nil"),
            Returned::Table(t) => writeln!(self.out, "=> Hbase::Table - {t}"),
            Returned::Value(v) => writeln!(self.out, "=> {v}"),
        }
    }

    /// HBase's shell wording of an error (`translate_hbase_exceptions`).
    fn error_message(&self, command: &str, e: ShellError) -> String {
        let e = match e {
            ShellError::Usage(m) => return m,
            ShellError::Model(e) => e,
        };
        match e {
            Error::TableNotFound(t) => format!("Unknown table {t}!"),
            Error::TableExists(t) => format!("Table already exists: {t}!"),
            Error::NamespaceNotFound(ns) => format!("Unknown namespace {ns}!"),
            Error::TableNotEnabled(t) => format!("Table {t} is disabled!"),
            Error::TableNotDisabled(t) => format!("Table {t} should be disabled!"),
            Error::NoSuchColumnFamily { table, .. } => {
                let valid = TableName::parse(&table)
                    .ok()
                    .and_then(|t| self.conn.admin().describe(&t).ok())
                    .map(|d| {
                        d.families
                            .keys()
                            .map(|f| format!("{}:*", String::from_utf8_lossy(f)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                format!("Unknown column family! Valid column names: {valid}")
            }
            Error::IllegalArgument(m) if command == "create" || command == "alter" => m,
            other => format!("{}: {other}", other.exception_name()),
        }
    }

    /// Writes a line of output.
    pub fn println(&mut self, line: impl AsRef<str>) -> std::io::Result<()> {
        writeln!(self.out, "{}", line.as_ref())
    }

    /// The output, for commands that print rows.
    pub fn out(&mut self) -> &mut dyn Write {
        &mut *self.out
    }

    /// The administrative interface of the connection.
    #[must_use]
    pub fn admin(&self) -> &'a dyn Admin {
        self.conn.admin()
    }

    /// Table `name` of the connection.
    pub fn table(&self, name: &TableName) -> Result<Arc<dyn Table>, Error> {
        self.conn.table(name)
    }

    /// Every command name, sorted (tab completion).
    #[must_use]
    pub fn command_names() -> Vec<&'static str> {
        commands::names()
    }
}

/// Commands that print no `Took` line of their own (help and the like).
fn run_prints_took(command: &str) -> bool {
    !matches!(
        command,
        "help" | "version" | "whoami" | "table_help" | "show_filters"
    )
}
