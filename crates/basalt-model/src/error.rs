//! The one error type of Basalt's libraries.
//!
//! Variants are precise (they carry the table, family, file or offset involved) and their
//! `Display` is a full sentence a user can act on. [`Error::exception_name`] maps each variant to
//! the HBase exception a client of HBase would see, which the server and gateways put on the wire.

use std::path::PathBuf;

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in Basalt's libraries.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A caller passed an argument HBase rejects on the client side (`IllegalArgumentException`).
    #[error("{0}")]
    IllegalArgument(String),
    /// A request names a family the table does not have (`NoSuchColumnFamilyException`).
    #[error("Column family {family} does not exist in table {table}")]
    NoSuchColumnFamily { table: String, family: String },
    /// The table does not exist (`TableNotFoundException`).
    #[error("Table {0} does not exist")]
    TableNotFound(String),
    /// A table of that name exists already (`TableExistsException`).
    #[error("Table already exists: {0}")]
    TableExists(String),
    /// The operation needs an enabled table (`TableNotEnabledException`).
    #[error("Table {0} is disabled")]
    TableNotEnabled(String),
    /// The operation needs a disabled table (`TableNotDisabledException`).
    #[error("Table {0} should be disabled")]
    TableNotDisabled(String),
    /// The namespace does not exist (`NamespaceNotFoundException`).
    #[error("Namespace {0} does not exist")]
    NamespaceNotFound(String),
    /// A namespace of that name exists already (`NamespaceExistException`).
    #[error("Namespace {0} already exists")]
    NamespaceExists(String),
    /// The request breaks a schema constraint (`ConstraintException`).
    #[error("{0}")]
    Constraint(String),
    /// A request the server refuses and that a retry cannot fix (`DoNotRetryIOException`).
    #[error("{0}")]
    DoNotRetry(String),
    /// A filter that cannot be combined with the scan's options (`IncompatibleFilterException`).
    #[error("{0}")]
    IncompatibleFilter(String),
    /// A row read without batching is larger than `hbase.table.max.rowsize`
    /// (`RowTooBigException`); read it with a batch size instead.
    #[error("{0}")]
    RowTooBig(String),
    /// The region cannot take more writes right now (`RegionTooBusyException`); retry later.
    #[error("{0}")]
    RegionTooBusy(String),
    /// The region is closed, or closing for a split or merge (`NotServingRegionException`);
    /// look the row's region up again and retry.
    #[error("{0} is not online")]
    NotServingRegion(String),
    /// The row's region failed to open (damaged or missing files) and serves nothing until
    /// an operator repairs it (`RegionOfflineException`); retrying does not help.
    #[error("{0}")]
    RegionOffline(String),
    /// No online region has that name (`UnknownRegionException`).
    #[error("{0}")]
    UnknownRegion(String),
    /// A scanner id the server does not know: closed, or its lease expired
    /// (`UnknownScannerException`); open a new scanner from the last row seen.
    #[error("Unknown scanner '{0}'. This can happen due to any of the following reasons: a) Scanner id given is wrong, b) Scanner lease expired because of long wait between consecutive client checkins, c) Server may be closing down, d) RegionServer restart during upgrade.\nIf the issue is due to reason (b), a possible fix would be increasing the value of'hbase.client.scanner.timeout.period' configuration.")]
    UnknownScanner(u64),
    /// This master is not the active one, or is still taking over (`PleaseHoldException`):
    /// ask the active master, found through any server, and retry.
    #[error("{0}")]
    PleaseHold(String),
    /// Regions that cannot be merged (`MergeRegionException`).
    #[error("{0}")]
    MergeRegion(String),
    /// Stored bytes failed a check: a bad checksum, a truncated block, an impossible length.
    #[error("corrupt {what} in {}: {detail}", path.display())]
    Corruption {
        what: &'static str,
        path: PathBuf,
        detail: String,
    },
    /// A broken promise inside Basalt (a bug), reported rather than hidden: a batch item
    /// that no code path answered, a peer's answer of the wrong shape. Not retryable.
    #[error("internal error: {0}")]
    Internal(String),
    /// An operating-system call failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The fully qualified name of the HBase exception this error corresponds to.
    #[must_use]
    pub fn exception_name(&self) -> &'static str {
        match self {
            Error::IllegalArgument(_) => "java.lang.IllegalArgumentException",
            Error::NoSuchColumnFamily { .. } => {
                "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException"
            }
            Error::TableNotFound(_) => "org.apache.hadoop.hbase.TableNotFoundException",
            Error::TableExists(_) => "org.apache.hadoop.hbase.TableExistsException",
            Error::TableNotEnabled(_) => "org.apache.hadoop.hbase.TableNotEnabledException",
            Error::TableNotDisabled(_) => "org.apache.hadoop.hbase.TableNotDisabledException",
            Error::NamespaceNotFound(_) => "org.apache.hadoop.hbase.NamespaceNotFoundException",
            Error::NamespaceExists(_) => "org.apache.hadoop.hbase.NamespaceExistException",
            Error::Constraint(_) => "org.apache.hadoop.hbase.constraint.ConstraintException",
            Error::DoNotRetry(_) => "org.apache.hadoop.hbase.DoNotRetryIOException",
            Error::IncompatibleFilter(_) => {
                "org.apache.hadoop.hbase.filter.IncompatibleFilterException"
            }
            Error::RegionTooBusy(_) => "org.apache.hadoop.hbase.RegionTooBusyException",
            Error::NotServingRegion(_) => "org.apache.hadoop.hbase.NotServingRegionException",
            Error::UnknownRegion(_) => "org.apache.hadoop.hbase.UnknownRegionException",
            Error::RegionOffline(_) => "org.apache.hadoop.hbase.client.RegionOfflineException",
            Error::MergeRegion(_) => "org.apache.hadoop.hbase.exceptions.MergeRegionException",
            Error::PleaseHold(_) => "org.apache.hadoop.hbase.PleaseHoldException",
            Error::UnknownScanner(_) => "org.apache.hadoop.hbase.UnknownScannerException",
            Error::RowTooBig(_) => "org.apache.hadoop.hbase.regionserver.RowTooBigException",
            Error::Corruption { .. } => "org.apache.hadoop.hbase.io.hfile.CorruptHFileException",
            Error::Internal(_) | Error::Io { .. } => "java.io.IOException",
        }
    }

    /// Whether a client may retry the same request and expect a different outcome.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::RegionTooBusy(_)
                | Error::NotServingRegion(_)
                | Error::PleaseHold(_)
                | Error::Io { .. }
        )
    }

    /// Wraps an I/O error with what was being done (a sentence fragment naming the file).
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// A read asked to use only memory (memstores and the block cache) needed `what` from
    /// disk; the caller reads again where it may block. RocksDB's `Incomplete` for its
    /// block-cache tier; never sent to a client.
    pub fn would_block(what: impl Into<String>) -> Self {
        Error::io(what, std::io::Error::from(std::io::ErrorKind::WouldBlock))
    }

    /// Whether this is [`Error::would_block`]'s error.
    #[must_use]
    pub fn is_would_block(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// An `IllegalArgumentException` with HBase's message.
    pub fn illegal(msg: impl Into<String>) -> Self {
        Error::IllegalArgument(msg.into())
    }

    /// A corruption error for `what` (a block, record or file part) in `path`.
    pub fn corruption(
        what: &'static str,
        path: impl Into<PathBuf>,
        detail: impl Into<String>,
    ) -> Self {
        Error::Corruption {
            what,
            path: path.into(),
            detail: detail.into(),
        }
    }
}

/// `text` with the server's directories left out of every absolute path in it, for messages
/// that cross the wire to unauthenticated clients: a path keeps its part from the data
/// directory's `data`, `wal`, `catalog` or `archive` on (`data/default/t/17/f/5.sf`), or else
/// only its file name.
#[must_use]
pub fn redact_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('/') {
        let before = &rest[..at];
        // A path starts a word: `/` after a space, a quote, a parenthesis or the start.
        let starts_word = before
            .chars()
            .last()
            .is_none_or(|c| c.is_whitespace() || matches!(c, '\'' | '"' | '(' | '[' | '='));
        out.push_str(before);
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | ')' | ']' | ','))
            .unwrap_or(tail.len());
        let (path, after) = tail.split_at(end);
        let path_body = path.trim_end_matches([':', '.', ';']);
        let trailing = &path[path_body.len()..];
        if starts_word && path_body.len() > 1 {
            out.push_str(&redact_path(path_body));
            out.push_str(trailing);
        } else {
            out.push_str(path);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

fn redact_path(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let from = parts
        .iter()
        .rposition(|p| matches!(*p, "data" | "wal" | "catalog" | "archive"))
        .unwrap_or(parts.len().saturating_sub(1));
    parts[from..].join("/")
}

#[cfg(test)]
mod redact_tests {
    use super::redact_paths;

    #[test]
    fn absolute_paths_lose_the_server_directories() {
        let cases = [
            (
                "corrupt block in /srv/basalt/data/default/t/17/66/0000000000000012.sf: checksum mismatch",
                "corrupt block in data/default/t/17/66/0000000000000012.sf: checksum mismatch",
            ),
            (
                "creating directory /home/u/db/data/nnn: File name too long",
                "creating directory data/nnn: File name too long",
            ),
            ("opening /etc/passwd: denied", "opening passwd: denied"),
            ("syncing the WAL (/x/wal/01.wal)", "syncing the WAL (wal/01.wal)"),
            ("row a/b and 1/2 are not paths", "row a/b and 1/2 are not paths"),
            ("no path here", "no path here"),
        ];
        for (input, want) in cases {
            assert_eq!(redact_paths(input), want, "{input}");
        }
    }
}
