//! Errors across the wire: a gRPC status whose metadata names HBase's exception and says
//! whether a retry may succeed, and back into the same `Error` on the client.

use std::path::PathBuf;

use basalt_model::Error;
use tonic::{Code, Status};

const EXCEPTION: &str = "exception";
const RETRYABLE: &str = "retryable";
/// `NoSuchColumnFamily`'s parts, so its message can stay a sentence.
const FAMILY: &str = "family";
const TABLE: &str = "table";

fn code_of(e: &Error) -> Code {
    match e {
        // Requests that can never succeed as sent: HBase's DoNotRetryIOException family.
        Error::IllegalArgument(_)
        | Error::IncompatibleFilter(_)
        | Error::DoNotRetry(_)
        | Error::MergeRegion(_) => Code::InvalidArgument,
        Error::TableNotFound(_)
        | Error::NamespaceNotFound(_)
        | Error::UnknownRegion(_)
        | Error::UnknownScanner(_) => Code::NotFound,
        Error::NoSuchColumnFamily { .. } => Code::NotFound,
        Error::TableExists(_) | Error::NamespaceExists(_) => Code::AlreadyExists,
        Error::TableNotEnabled(_)
        | Error::TableNotDisabled(_)
        | Error::Constraint(_)
        | Error::RegionOffline(_) => Code::FailedPrecondition,
        Error::RegionTooBusy(_) | Error::NotServingRegion(_) | Error::PleaseHold(_) => {
            Code::Unavailable
        }
        Error::Corruption { .. } => Code::DataLoss,
        Error::RowTooBig(_) => Code::ResourceExhausted,
        _ => Code::Internal,
    }
}

/// The status an error crosses the wire as.
#[must_use]
pub fn to_status(e: &Error) -> Status {
    let mut s = Status::new(code_of(e), message_of(e));
    let md = s.metadata_mut();
    if let Ok(v) = e.exception_name().parse() {
        md.insert(EXCEPTION, v);
    }
    if let Ok(v) = e.is_retryable().to_string().parse() {
        md.insert(RETRYABLE, v);
    }
    if let Error::NoSuchColumnFamily { table, family } = e {
        // Names are printable ASCII already (HBase's escaped binary form).
        for (k, v) in [(FAMILY, family), (TABLE, table)] {
            if let Ok(v) = v.parse() {
                md.insert(k, v);
            }
        }
    }
    s
}

/// The error's payload: what reconstructs it on the other side.
fn message_of(e: &Error) -> String {
    match e {
        Error::IllegalArgument(m)
        | Error::TableNotFound(m)
        | Error::TableExists(m)
        | Error::TableNotEnabled(m)
        | Error::TableNotDisabled(m)
        | Error::NamespaceNotFound(m)
        | Error::NamespaceExists(m)
        | Error::Constraint(m)
        | Error::DoNotRetry(m)
        | Error::IncompatibleFilter(m)
        | Error::RowTooBig(m)
        | Error::RegionTooBusy(m)
        | Error::NotServingRegion(m)
        | Error::PleaseHold(m)
        | Error::UnknownRegion(m)
        | Error::RegionOffline(m)
        | Error::MergeRegion(m) => m.clone(),
        Error::UnknownScanner(id) => id.to_string(),
        // Clients are not authenticated: the server's directories stay out of messages.
        other => basalt_model::error::redact_paths(&other.to_string()),
    }
}

/// The error a status carries: the same variant as on the server when it names an HBase
/// exception, else an I/O error for transport failures (retryable when gRPC says so).
#[must_use]
pub fn from_status(s: &Status) -> Error {
    let exception = s
        .metadata()
        .get(EXCEPTION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let m = s.message().to_owned();
    match exception {
        "java.lang.IllegalArgumentException" => Error::IllegalArgument(m),
        "org.apache.hadoop.hbase.TableNotFoundException" => Error::TableNotFound(m),
        "org.apache.hadoop.hbase.TableExistsException" => Error::TableExists(m),
        "org.apache.hadoop.hbase.TableNotEnabledException" => Error::TableNotEnabled(m),
        "org.apache.hadoop.hbase.TableNotDisabledException" => Error::TableNotDisabled(m),
        "org.apache.hadoop.hbase.NamespaceNotFoundException" => Error::NamespaceNotFound(m),
        "org.apache.hadoop.hbase.NamespaceExistException" => Error::NamespaceExists(m),
        "org.apache.hadoop.hbase.constraint.ConstraintException" => Error::Constraint(m),
        "org.apache.hadoop.hbase.DoNotRetryIOException" => Error::DoNotRetry(m),
        "org.apache.hadoop.hbase.filter.IncompatibleFilterException" => {
            Error::IncompatibleFilter(m)
        }
        "org.apache.hadoop.hbase.regionserver.RowTooBigException" => Error::RowTooBig(m),
        "org.apache.hadoop.hbase.RegionTooBusyException" => Error::RegionTooBusy(m),
        "org.apache.hadoop.hbase.NotServingRegionException" => Error::NotServingRegion(m),
        "org.apache.hadoop.hbase.PleaseHoldException" => Error::PleaseHold(m),
        "org.apache.hadoop.hbase.UnknownRegionException" => Error::UnknownRegion(m),
        "org.apache.hadoop.hbase.client.RegionOfflineException" => Error::RegionOffline(m),
        "org.apache.hadoop.hbase.exceptions.MergeRegionException" => Error::MergeRegion(m),
        "org.apache.hadoop.hbase.UnknownScannerException" => {
            Error::UnknownScanner(m.parse().unwrap_or(0))
        }
        "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException" => {
            let part = |k: &str| {
                s.metadata()
                    .get(k)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            };
            Error::NoSuchColumnFamily {
                table: part(TABLE),
                family: part(FAMILY),
            }
        }
        "org.apache.hadoop.hbase.io.hfile.CorruptHFileException" => {
            Error::corruption("data on the server", PathBuf::new(), m)
        }
        _ => {
            let kind = if s.code() == Code::Unavailable || s.code() == Code::DeadlineExceeded {
                std::io::ErrorKind::ConnectionAborted
            } else {
                std::io::ErrorKind::Other
            };
            Error::io(
                format!("calling the server ({})", s.code()),
                std::io::Error::new(kind, m),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_cross_the_wire_as_themselves() {
        let cases = [
            Error::TableNotFound("t1".into()),
            Error::NoSuchColumnFamily {
                table: "t1".into(),
                family: "zz".into(),
            },
            Error::RegionTooBusy("Over memstore limit=2.0 M".into()),
            Error::Constraint("Only empty namespaces can be removed.".into()),
            Error::IllegalArgument("Row length 0 is < 1".into()),
            Error::UnknownScanner(42),
        ];
        for e in cases {
            let s = to_status(&e);
            assert_eq!(s.metadata().get("exception").unwrap(), e.exception_name());
            let back = from_status(&s);
            assert_eq!(back.to_string(), e.to_string());
            assert_eq!(back.exception_name(), e.exception_name());
            assert_eq!(back.is_retryable(), e.is_retryable());
        }
        let transport = from_status(&Status::unavailable("connection refused"));
        assert!(transport.is_retryable());
    }

    #[test]
    fn client_errors_never_come_back_as_internal_and_messages_are_sentences() {
        let client_errors = [
            Error::DoNotRetry("Table should have at least one column family.".into()),
            Error::MergeRegion("Need at least two regions to merge".into()),
            Error::DoNotRetry("Split row is equal to startkey: a".into()),
            Error::Constraint("Cannot disable catalog table".into()),
            Error::RegionOffline("region r failed to open".into()),
        ];
        for e in client_errors {
            let s = to_status(&e);
            assert_ne!(s.code(), Code::Internal, "{e}");
            assert_ne!(s.code(), Code::Unknown, "{e}");
        }
        let e = Error::NoSuchColumnFamily {
            table: "t1".into(),
            family: "zz".into(),
        };
        let s = to_status(&e);
        assert_eq!(s.code(), Code::NotFound);
        assert_eq!(s.message(), "Column family zz does not exist in table t1");
        assert!(!s.message().contains('\u{0}'));
    }
}
