//! What the input protocol knows of `Hbase.thrift`'s shapes, to stand in for what a client
//! leaves out:
//!
//! - Arguments. The generated decoder treats every argument as required, but HBase's gateway
//!   (Java, where a missing argument is `null`) gives some a meaning when absent:
//!   `checkAndPut` without `value` checks that the column does not exist, a
//!   `getRowWithColumns` without `columns` reads every column, and a missing `attributes` map
//!   is no attributes. Python clients leave out every argument passed as `None`. The protocol
//!   stands in the empty value for each missing argument and records which were missing
//!   (`stand_in::take_absent_arguments`).
//! - Struct fields with IDL defaults. The generated decoder gives a missing field its type's
//!   zero, not the IDL's default, so a `Mutation` without `writeToWAL` would skip the WAL,
//!   where HBase (whose Java structs start from the defaults) writes it. The protocol stands
//!   in the IDL's default for such fields of `Mutation` and `ColumnDescriptor`.

/// Which of the structs the protocol stands in fields for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A method's arguments.
    Args,
    Mutation,
    BatchMutation,
    ColumnDescriptor,
    /// Any other struct: nothing stood in.
    Other,
}

/// A value stood in for a missing field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    /// The empty value of an argument's type.
    Empty(Arg),
    Bool(bool),
    I32(i32),
    Text(&'static [u8]),
}

/// The kind of the structs in field `id` of a `parent` struct of `method`'s request.
pub(crate) fn child_kind(method: &str, parent: Kind, id: i16) -> Kind {
    match (parent, method, id) {
        (Kind::Args, "mutateRow" | "mutateRowTs", 3) | (Kind::Args, "checkAndPut", 6) => {
            Kind::Mutation
        }
        (Kind::Args, "mutateRows" | "mutateRowsTs", 2) => Kind::BatchMutation,
        (Kind::Args, "createTable", 2) => Kind::ColumnDescriptor,
        (Kind::BatchMutation, _, 2) => Kind::Mutation,
        _ => Kind::Other,
    }
}

/// The IDL defaults of the fields of `kind` whose decoder default differs.
pub(crate) fn field_defaults(kind: Kind) -> &'static [(i16, Value)] {
    match kind {
        // writeToWAL = 1
        Kind::Mutation => &[(4, Value::Bool(true))],
        // maxVersions = 3, compression = "NONE", bloomFilterType = "NONE",
        // timeToLive = 0x7fffffff
        Kind::ColumnDescriptor => &[
            (2, Value::I32(3)),
            (3, Value::Text(b"NONE")),
            (5, Value::Text(b"NONE")),
            (9, Value::I32(i32::MAX)),
        ],
        _ => &[],
    }
}

/// The wire type of an argument and the empty value that stands in for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arg {
    /// `Text` or `Bytes`: empty.
    Bytes,
    /// `list<Text>`: empty.
    Texts,
    /// A list of structs: empty.
    Structs,
    /// `map<Text, Text>`: empty.
    Attributes,
    I32,
    I64,
    /// A struct: no fields.
    Struct,
}

use Arg::{Attributes as M, Bytes as B, Structs as S, Texts as L, I32, I64};

/// The arguments of `method` as `(field id, type)`; `None` for a method `Hbase` lacks.
#[allow(clippy::match_same_arms)] // one arm per method, in the IDL's order
pub(crate) fn arguments(method: &str) -> Option<&'static [(i16, Arg)]> {
    Some(match method {
        "enableTable"
        | "disableTable"
        | "isTableEnabled"
        | "compact"
        | "majorCompact"
        | "getColumnDescriptors"
        | "getTableRegions"
        | "deleteTable"
        | "getRegionInfo" => &[(1, B)],
        "getTableNames"
        | "getTableNamesWithIsTableEnabled"
        | "getThriftServerType"
        | "getClusterId" => &[],
        "createTable" => &[(1, B), (2, S)],
        "get" | "deleteAll" => &[(1, B), (2, B), (3, B), (4, M)],
        "getVer" => &[(1, B), (2, B), (3, B), (4, I32), (5, M)],
        "getVerTs" => &[(1, B), (2, B), (3, B), (4, I64), (5, I32), (6, M)],
        "getRow" | "deleteAllRow" => &[(1, B), (2, B), (3, M)],
        "getRowWithColumns" | "scannerOpen" | "scannerOpenWithPrefix" => {
            &[(1, B), (2, B), (3, L), (4, M)]
        }
        "getRowTs" | "deleteAllRowTs" => &[(1, B), (2, B), (3, I64), (4, M)],
        "getRowWithColumnsTs" | "scannerOpenTs" => &[(1, B), (2, B), (3, L), (4, I64), (5, M)],
        "getRows" => &[(1, B), (2, L), (3, M)],
        "getRowsWithColumns" => &[(1, B), (2, L), (3, L), (4, M)],
        "getRowsTs" => &[(1, B), (2, L), (3, I64), (4, M)],
        "getRowsWithColumnsTs" => &[(1, B), (2, L), (3, L), (4, I64), (5, M)],
        "mutateRow" => &[(1, B), (2, B), (3, S), (4, M)],
        "mutateRowTs" => &[(1, B), (2, B), (3, S), (4, I64), (5, M)],
        "mutateRows" => &[(1, B), (2, S), (3, M)],
        "mutateRowsTs" => &[(1, B), (2, S), (3, I64), (4, M)],
        "atomicIncrement" => &[(1, B), (2, B), (3, B), (4, I64)],
        "deleteAllTs" => &[(1, B), (2, B), (3, B), (4, I64), (5, M)],
        "increment" | "append" | "grant" | "revoke" => &[(1, Arg::Struct)],
        "incrementRows" => &[(1, S)],
        "scannerOpenWithScan" => &[(1, B), (2, Arg::Struct), (3, M)],
        "scannerOpenWithStop" => &[(1, B), (2, B), (3, B), (4, L), (5, M)],
        "scannerOpenWithStopTs" => &[(1, B), (2, B), (3, B), (4, L), (5, I64), (6, M)],
        "scannerGet" | "scannerClose" => &[(1, I32)],
        "scannerGetList" => &[(1, I32), (2, I32)],
        "checkAndPut" => &[(1, B), (2, B), (3, B), (5, B), (6, Arg::Struct), (7, M)],
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_has_its_arguments() {
        for m in super::super::METHODS {
            let args = arguments(m).unwrap_or_else(|| panic!("{m} has no arguments listed"));
            assert!(
                args.windows(2).all(|w| w[0].0 < w[1].0),
                "{m}: ids in order"
            );
        }
        assert_eq!(arguments("noSuchMethod"), None);
    }
}
