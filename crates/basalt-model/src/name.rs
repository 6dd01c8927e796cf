//! Names of namespaces, tables and column families (SEMANTICS.md §4.4).

use std::fmt;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::limits::MAX_FAMILY_LENGTH;

/// The namespace of tables named without a prefix.
pub const DEFAULT_NAMESPACE: &str = "default";
/// The namespace of system tables.
pub const SYSTEM_NAMESPACE: &str = "hbase";

/// A table's full name: namespace and qualifier. `default:t` and `t` are the same table, and
/// both print as `t`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableName {
    namespace: String,
    qualifier: String,
}

impl TableName {
    /// Parses `ns:qualifier` or `qualifier` and checks both parts.
    ///
    /// # Errors
    /// `IllegalArgument` with HBase's message when a part is empty or has a character HBase
    /// does not allow.
    pub fn parse(name: &str) -> Result<TableName> {
        let (namespace, qualifier) = match name.split_once(':') {
            Some((ns, q)) => (ns, q),
            None => (DEFAULT_NAMESPACE, name),
        };
        TableName::new(namespace, qualifier)
    }

    /// A table name from its two parts, checked.
    ///
    /// # Errors
    /// `IllegalArgument` when either part breaks the naming rules.
    pub fn new(namespace: &str, qualifier: &str) -> Result<TableName> {
        validate_namespace(namespace)?;
        validate_table_qualifier(qualifier)?;
        Ok(TableName {
            namespace: namespace.to_owned(),
            qualifier: qualifier.to_owned(),
        })
    }

    /// The namespace part (`default` when the name had no prefix).
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The qualifier part.
    #[must_use]
    pub fn qualifier(&self) -> &str {
        &self.qualifier
    }

    /// Whether this is a system table (namespace `hbase`).
    #[must_use]
    pub fn is_system(&self) -> bool {
        self.namespace == SYSTEM_NAMESPACE
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace == DEFAULT_NAMESPACE {
            f.write_str(&self.qualifier)
        } else {
            write!(f, "{}:{}", self.namespace, self.qualifier)
        }
    }
}

/// The longest namespace or table qualifier, in bytes: each names a directory, and no file
/// system takes a longer file name (NAME_MAX). A longer one is refused up front, not by the
/// file system halfway through a create.
pub const MAX_NAME_BYTES: usize = 255;

/// `host:port` of a server name (HBase's `ServerName`, `host,port,start code`): where a
/// client or the master reaches that server.
///
/// # Errors
/// `IllegalArgument` for anything else.
pub fn server_address(name: &str) -> Result<String> {
    let mut parts = name.split(',');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(host), Some(port), Some(start), None)
            if port.parse::<u16>().is_ok() && start.parse::<i64>().is_ok() =>
        {
            Ok(format!("{host}:{port}"))
        }
        _ => Err(Error::illegal(format!(
            "{name:?} is not a server name (host,port,start code)"
        ))),
    }
}

fn check_name_length(what: &str, name: &str) -> Result<()> {
    if name.len() > MAX_NAME_BYTES {
        return Err(Error::illegal(format!(
            "{what} is {} bytes long; the limit is {MAX_NAME_BYTES}",
            name.len()
        )));
    }
    Ok(())
}

/// Checks a namespace name: one or more letters, digits or underscores.
///
/// # Errors
/// `IllegalArgument` naming the offending character.
pub fn validate_namespace(ns: &str) -> Result<()> {
    if ns.is_empty() {
        return Err(Error::illegal("Namespace name must not be empty"));
    }
    check_name_length("Namespace name", ns)?;
    for (i, c) in ns.chars().enumerate() {
        if !(c.is_alphanumeric() || c == '_') {
            return Err(Error::illegal(format!(
                "Illegal character <{c}> at {i}. Namespaces may only contain 'alphanumeric \
                 characters' from any language and/or '_': {ns}"
            )));
        }
    }
    Ok(())
}

/// Checks a table qualifier: `[a-zA-Z_0-9-.]`, not starting with `.` or `-`.
///
/// # Errors
/// `IllegalArgument` with HBase's wording.
pub fn validate_table_qualifier(q: &str) -> Result<()> {
    if q.is_empty() {
        return Err(Error::illegal("Table qualifier must not be empty"));
    }
    check_name_length("Table qualifier", q)?;
    if q == ".META." || q == "-ROOT-" {
        return Err(Error::illegal(format!(
            "{q} is no longer a valid table name"
        )));
    }
    if q.starts_with('.') || q.starts_with('-') {
        return Err(Error::illegal(format!(
            "Illegal first character <{}> at 0. User-space table qualifiers can only start with \
             'alphanumeric characters' from any language: {q}",
            &q[..1]
        )));
    }
    for (i, b) in q.bytes().enumerate() {
        if !(b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.') {
            return Err(Error::illegal(format!(
                "Illegal character code:{b}, <{}> at {i}. User-space table qualifiers can only \
                 contain 'alphanumeric characters' from any language and/or '_', '.', '-': {q}",
                char::from(b)
            )));
        }
    }
    Ok(())
}

/// Checks a column-family name (ColumnFamilyDescriptorBuilder.isLegalColumnFamilyName).
///
/// # Errors
/// `IllegalArgument` naming the rule the name breaks.
pub fn validate_family(name: &[u8]) -> Result<()> {
    let shown = crate::bytes_fmt::to_string_binary(name);
    if name.is_empty() {
        return Err(Error::illegal("Column Family name can not be empty"));
    }
    if name.len() > MAX_FAMILY_LENGTH {
        return Err(Error::illegal(format!(
            "Column Family name is longer than {MAX_FAMILY_LENGTH} bytes: {shown}"
        )));
    }
    if name[0] == b'.' {
        return Err(Error::illegal(format!(
            "Column Family names cannot start with a period: {shown}"
        )));
    }
    for &b in name {
        if b.is_ascii_control() || b == b':' || b == b'\\' || b == b'/' {
            return Err(Error::illegal(format!(
                "Column Family name contains an illegal character '{}': {shown}",
                crate::bytes_fmt::to_string_binary(&[b])
            )));
        }
    }
    if name == b"recovered.edits" {
        return Err(Error::illegal(format!(
            "Column Family name cannot be: {shown}"
        )));
    }
    Ok(())
}

/// A family name held as bytes, as HBase does.
pub type FamilyName = Bytes;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_name_gives_its_address() {
        assert_eq!(
            server_address("rs1.example.com,16020,1700000000000").unwrap(),
            "rs1.example.com:16020"
        );
        for bad in [
            "rs1:16020",
            "rs1,port,1",
            "rs1,16020",
            "rs1,16020,x",
            "a,1,2,3",
            "",
        ] {
            let e = server_address(bad).unwrap_err();
            assert!(matches!(e, Error::IllegalArgument(_)), "{bad}: {e}");
        }
    }

    #[test]
    fn default_namespace_is_implicit() {
        let a = TableName::parse("t1").unwrap();
        let b = TableName::parse("default:t1").unwrap();
        assert_eq!(a, b);
        assert_eq!(b.to_string(), "t1");
        assert_eq!(TableName::parse("ns1:t1").unwrap().to_string(), "ns1:t1");
    }

    /// RELIABILITY.md D16: a name that cannot be a file name is refused up front.
    #[test]
    fn names_longer_than_a_file_name_are_refused() {
        let long = "n".repeat(MAX_NAME_BYTES + 1);
        let e = validate_namespace(&long).unwrap_err();
        assert!(e.to_string().contains("the limit is 255"), "{e}");
        assert!(TableName::new("default", &long).is_err());
        assert!(TableName::new(&"n".repeat(MAX_NAME_BYTES), "t").is_ok());
        // Bytes count, not characters: 128 two-byte letters are 256 bytes.
        assert!(validate_namespace(&"é".repeat(128)).is_err());
    }

    #[test]
    fn table_names_follow_hbase_rules() {
        for ok in ["t", "a-b.c_d", "T9", "ns_1:x"] {
            assert!(TableName::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", ".x", "-x", "a b", "a/b", "ns-1:t", ":t", "ns:", ".META.", "-ROOT-",
        ] {
            assert!(
                matches!(TableName::parse(bad), Err(Error::IllegalArgument(_))),
                "{bad}"
            );
        }
        let msg = TableName::parse("a b").unwrap_err().to_string();
        assert!(msg.contains("Illegal character code:32, < > at 1"), "{msg}");
    }

    #[test]
    fn family_names_follow_hbase_rules() {
        assert!(validate_family(b"cf").is_ok());
        assert!(validate_family(b"a.b-c").is_ok());
        for bad in [
            &b""[..],
            b".cf",
            b"a:b",
            b"a/b",
            b"a\\b",
            b"a\nb",
            b"recovered.edits",
        ] {
            assert!(validate_family(bad).is_err(), "{bad:?}");
        }
        assert!(validate_family(&[b'a'; 127]).is_ok());
        assert!(validate_family(&[b'a'; 128]).is_err());
    }
}
