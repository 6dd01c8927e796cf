//! Column-family and table descriptors with HBase's defaults (SEMANTICS.md §4.1, §4.2).

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::name::{validate_family, TableName};

/// CF TTL meaning "never expires" (`HConstants.FOREVER`, `Integer.MAX_VALUE` seconds).
pub const TTL_FOREVER_SECONDS: u32 = i32::MAX as u32;

/// Whether deleted cells stay readable by time-ranged reads (KEEP_DELETED_CELLS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeepDeletedCells {
    /// Deleted cells are never visible and major compaction removes them (the default).
    #[default]
    False,
    /// Deleted cells stay for time ranges that end before the marker.
    True,
    /// Like `True`, but markers and deleted cells expire with the family TTL.
    Ttl,
}

/// Bloom filter kind of a family's store files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum BloomType {
    None,
    /// Keyed by row: answers "may this file hold row R?".
    #[default]
    Row,
    /// Keyed by row and qualifier.
    RowCol,
}

/// Block compression codec.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Compression {
    #[default]
    None,
    Lz4,
    Zstd,
    Snappy,
    Gz,
}

/// Data block encoding. Basalt always prefix-encodes keys between restart points, so these
/// names are accepted for compatibility and do not change the file layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DataBlockEncoding {
    #[default]
    None,
    Prefix,
    Diff,
    FastDiff,
    RowIndexV1,
}

/// How a write reaches the WAL before it is acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Durability {
    /// Use the table's setting (for a table: SYNC_WAL).
    #[default]
    UseDefault,
    /// Not written to the WAL: lost if the process dies before a flush.
    SkipWal,
    /// Written to the WAL and synced in the background within a bounded delay.
    AsyncWal,
    /// Written and fdatasync'ed before the write is acknowledged.
    SyncWal,
    /// Written and fsync'ed (data and metadata) before the write is acknowledged.
    FsyncWal,
}

impl Durability {
    /// The effective level of a mutation with `self` on a table whose setting is `table`.
    #[must_use]
    pub fn resolve(self, table: Durability) -> Durability {
        match (self, table) {
            (Durability::UseDefault, Durability::UseDefault) => Durability::SyncWal,
            (Durability::UseDefault, t) => t,
            (m, _) => m,
        }
    }
}

/// HBase's names of an enumerated setting, as the shell, `describe` and the wire write them.
macro_rules! hbase_names {
    ($t:ty { $($v:ident => $n:literal),+ $(,)? }) => {
        impl $t {
            /// HBase's name of the setting (`describe` prints it).
            #[must_use]
            pub fn hbase_name(self) -> &'static str {
                match self {
                    $(<$t>::$v => $n),+
                }
            }

            /// The setting HBase calls `name` (any case).
            #[must_use]
            pub fn from_hbase_name(name: &str) -> Option<$t> {
                let upper = name.to_ascii_uppercase();
                match upper.as_str() {
                    $($n => Some(<$t>::$v),)+
                    _ => None,
                }
            }
        }
    };
}

hbase_names!(KeepDeletedCells { False => "FALSE", True => "TRUE", Ttl => "TTL" });
hbase_names!(BloomType { None => "NONE", Row => "ROW", RowCol => "ROWCOL" });
hbase_names!(Compression {
    None => "NONE",
    Lz4 => "LZ4",
    Zstd => "ZSTD",
    Snappy => "SNAPPY",
    Gz => "GZ",
});
hbase_names!(DataBlockEncoding {
    None => "NONE",
    Prefix => "PREFIX",
    Diff => "DIFF",
    FastDiff => "FAST_DIFF",
    RowIndexV1 => "ROW_INDEX_V1",
});
hbase_names!(Durability {
    UseDefault => "USE_DEFAULT",
    SkipWal => "SKIP_WAL",
    AsyncWal => "ASYNC_WAL",
    SyncWal => "SYNC_WAL",
    FsyncWal => "FSYNC_WAL",
});

/// A column family's schema (ColumnFamilyDescriptor).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnFamilyDescriptor {
    pub name: Bytes,
    pub max_versions: u32,
    pub min_versions: u32,
    pub ttl_seconds: u32,
    pub keep_deleted_cells: KeepDeletedCells,
    pub bloom_filter: BloomType,
    pub block_size_bytes: u32,
    pub block_cache: bool,
    pub in_memory: bool,
    pub compression: Compression,
    pub data_block_encoding: DataBlockEncoding,
    pub replication_scope: u32,
    /// NEW_VERSION_BEHAVIOR: a delete marker masks only the cells written before it (a lower
    /// sequence id), never a later write, whatever its timestamp. Defaulted when absent, so
    /// descriptors stored before the field existed still load.
    #[serde(default)]
    pub new_version_behavior: bool,
    /// Per-family settings that override server configuration (CONFIGURATION => {...}).
    pub configuration: BTreeMap<String, String>,
    /// Keys Basalt does not interpret, kept and shown as METADATA.
    pub metadata: BTreeMap<String, String>,
}

impl ColumnFamilyDescriptor {
    /// A family with every attribute at HBase's default.
    pub fn new(name: impl Into<Bytes>) -> ColumnFamilyDescriptor {
        ColumnFamilyDescriptor {
            name: name.into(),
            max_versions: 1,
            min_versions: 0,
            ttl_seconds: TTL_FOREVER_SECONDS,
            keep_deleted_cells: KeepDeletedCells::False,
            bloom_filter: BloomType::Row,
            block_size_bytes: 65_536,
            block_cache: true,
            in_memory: false,
            compression: Compression::None,
            data_block_encoding: DataBlockEncoding::None,
            replication_scope: 0,
            new_version_behavior: false,
            configuration: BTreeMap::new(),
            metadata: BTreeMap::new(),
        }
    }

    /// Sets VERSIONS.
    #[must_use]
    pub fn with_max_versions(mut self, n: u32) -> Self {
        self.max_versions = n;
        self
    }

    /// Sets MIN_VERSIONS.
    #[must_use]
    pub fn with_min_versions(mut self, n: u32) -> Self {
        self.min_versions = n;
        self
    }

    /// Sets TTL in seconds.
    #[must_use]
    pub fn with_ttl_seconds(mut self, s: u32) -> Self {
        self.ttl_seconds = s;
        self
    }

    /// Sets KEEP_DELETED_CELLS.
    #[must_use]
    pub fn with_keep_deleted_cells(mut self, k: KeepDeletedCells) -> Self {
        self.keep_deleted_cells = k;
        self
    }

    /// Sets BLOOMFILTER.
    #[must_use]
    pub fn with_bloom_filter(mut self, b: BloomType) -> Self {
        self.bloom_filter = b;
        self
    }

    /// Sets COMPRESSION.
    #[must_use]
    pub fn with_compression(mut self, c: Compression) -> Self {
        self.compression = c;
        self
    }

    /// Sets BLOCKSIZE in bytes.
    #[must_use]
    pub fn with_block_size_bytes(mut self, n: u32) -> Self {
        self.block_size_bytes = n;
        self
    }

    /// `BLOCKCACHE`: whether reads cache this family's data blocks.
    #[must_use]
    pub fn with_block_cache(mut self, on: bool) -> Self {
        self.block_cache = on;
        self
    }

    /// `IN_MEMORY`: cache this family's blocks at the higher priority.
    #[must_use]
    pub fn with_in_memory(mut self, on: bool) -> Self {
        self.in_memory = on;
        self
    }

    /// Sets NEW_VERSION_BEHAVIOR.
    #[must_use]
    pub fn with_new_version_behavior(mut self, on: bool) -> Self {
        self.new_version_behavior = on;
        self
    }

    /// Whether the family has a finite TTL.
    #[must_use]
    pub fn has_ttl(&self) -> bool {
        self.ttl_seconds != TTL_FOREVER_SECONDS
    }

    /// The TTL in milliseconds, `None` for FOREVER.
    #[must_use]
    pub fn ttl_ms(&self) -> Option<i64> {
        self.has_ttl().then(|| i64::from(self.ttl_seconds) * 1000)
    }

    /// HBase's sanity checks (TableDescriptorChecker): name rules, VERSIONS ≥ 1,
    /// MIN_VERSIONS ≤ VERSIONS, TTL > 0, BLOCKSIZE within 1 KiB..16 MiB.
    ///
    /// # Errors
    /// `DoNotRetry` naming the family and the broken rule.
    pub fn validate(&self) -> Result<()> {
        validate_family(&self.name)?;
        let name = crate::bytes_fmt::to_string_binary(&self.name);
        let fail = |why: String| Err(Error::DoNotRetry(format!("{why} for column family {name}")));
        if self.max_versions < 1 {
            return fail("Maximum versions must be positive".into());
        }
        if self.min_versions > self.max_versions {
            return fail(format!(
                "Minimum versions ({}) must be <= maximum versions ({})",
                self.min_versions, self.max_versions
            ));
        }
        if self.ttl_seconds == 0 {
            return fail("TTL must be positive".into());
        }
        if !(1024..=16 * 1024 * 1024).contains(&self.block_size_bytes) {
            return fail(format!(
                "Block size {} must be between 1K and 16MB",
                self.block_size_bytes
            ));
        }
        Ok(())
    }
}

/// Default region split threshold (`hbase.hregion.max.filesize`, 10 GiB).
pub const DEFAULT_MAX_FILESIZE_BYTES: u64 = 10 * 1024 * 1024 * 1024;
/// The smallest `MAX_FILESIZE` the sanity checks accept (`hbase.hregion.max.filesize.limit`,
/// 2 MiB).
pub const MAX_FILESIZE_LOWER_LIMIT_BYTES: u64 = 2 * 1024 * 1024;
/// Default memstore flush threshold (`hbase.hregion.memstore.flush.size`, 128 MiB).
pub const DEFAULT_MEMSTORE_FLUSHSIZE_BYTES: u64 = 128 * 1024 * 1024;

/// A table's schema (TableDescriptor).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDescriptor {
    pub name: TableNameRepr,
    /// Families by name; a `BTreeMap` so that iteration is in family order (the key order).
    #[serde(with = "families_as_list")]
    pub families: BTreeMap<Bytes, ColumnFamilyDescriptor>,
    pub max_filesize_bytes: u64,
    pub memstore_flushsize_bytes: u64,
    pub durability: Durability,
    pub read_only: bool,
    pub compaction_enabled: bool,
    pub split_enabled: bool,
    pub merge_enabled: bool,
    pub configuration: BTreeMap<String, String>,
    pub metadata: BTreeMap<String, String>,
}

/// A table name in a form that serialises as `ns:qualifier`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableNameRepr(pub String, pub String);

impl From<&TableName> for TableNameRepr {
    fn from(t: &TableName) -> Self {
        TableNameRepr(t.namespace().to_owned(), t.qualifier().to_owned())
    }
}

impl TableDescriptor {
    /// A table with the given families and HBase's default attributes.
    pub fn new(
        name: &TableName,
        families: impl IntoIterator<Item = ColumnFamilyDescriptor>,
    ) -> TableDescriptor {
        TableDescriptor {
            name: name.into(),
            families: families.into_iter().map(|f| (f.name.clone(), f)).collect(),
            max_filesize_bytes: DEFAULT_MAX_FILESIZE_BYTES,
            memstore_flushsize_bytes: DEFAULT_MEMSTORE_FLUSHSIZE_BYTES,
            durability: Durability::UseDefault,
            read_only: false,
            compaction_enabled: true,
            split_enabled: true,
            merge_enabled: true,
            configuration: BTreeMap::new(),
            metadata: BTreeMap::new(),
        }
    }

    /// A table with the given families, refusing a family named twice as HBase's
    /// `TableDescriptorBuilder` does (rather than letting one silently win).
    ///
    /// # Errors
    /// `IllegalArgument` "Family 'f' already exists so cannot be added".
    pub fn with_families(
        name: &TableName,
        families: impl IntoIterator<Item = ColumnFamilyDescriptor>,
    ) -> Result<TableDescriptor> {
        let mut t = TableDescriptor::new(name, []);
        for f in families {
            t.add_family(f)?;
        }
        Ok(t)
    }

    /// Adds a family the table does not have yet.
    ///
    /// # Errors
    /// `IllegalArgument` when the table has it already.
    pub fn add_family(&mut self, f: ColumnFamilyDescriptor) -> Result<()> {
        if self.families.contains_key(&f.name) {
            return Err(Error::illegal(format!(
                "Family '{}' already exists so cannot be added",
                String::from_utf8_lossy(&f.name)
            )));
        }
        self.families.insert(f.name.clone(), f);
        Ok(())
    }

    /// The table's name.
    ///
    /// # Panics
    /// Never for a descriptor built by [`TableDescriptor::new`]; the name was validated then.
    #[must_use]
    pub fn table_name(&self) -> TableName {
        TableName::new(&self.name.0, &self.name.1)
            .expect("descriptor names are validated on creation")
    }

    /// The family named `name`, if the table has it.
    #[must_use]
    pub fn family(&self, name: &[u8]) -> Option<&ColumnFamilyDescriptor> {
        self.families.get(name)
    }

    /// Checks the table as HBase's TableDescriptorChecker does.
    ///
    /// # Errors
    /// `DoNotRetry` for a table without families or with an invalid family.
    pub fn validate(&self) -> Result<()> {
        let checks_on = self
            .configuration
            .get("hbase.table.sanity.checks")
            .map(String::as_str)
            != Some("false");
        // As in HBase, a table that turns the sanity checks off may have no family yet
        // (a Bigtable table is created so, its families added later).
        if checks_on && self.families.is_empty() {
            return Err(Error::DoNotRetry(
                "Table should have at least one column family.".into(),
            ));
        }
        for f in self.families.values() {
            f.validate()?;
        }
        if checks_on && self.max_filesize_bytes < MAX_FILESIZE_LOWER_LIMIT_BYTES {
            // HBase's `hbase.hregion.max.filesize.limit`: smaller regions split without end.
            return Err(Error::DoNotRetry(format!(
                "MAX_FILESIZE for table descriptor or \"hbase.hregion.max.filesize\" ({}) is too small, which might cause over splitting into unmanageable number of regions.",
                self.max_filesize_bytes
            )));
        }
        if checks_on && self.memstore_flushsize_bytes < 1024 * 1024 {
            // HBase refuses flush sizes under 1 MiB unless the table turns sanity checks off,
            // which tests do to exercise flushes cheaply.
            return Err(Error::DoNotRetry(format!(
                "MEMSTORE_FLUSHSIZE for table descriptor or \"hbase.hregion.memstore.flush.size\" ({}) is too small, which might cause very frequent flushing.",
                self.memstore_flushsize_bytes
            )));
        }
        Ok(())
    }
}

/// Family names are bytes, which JSON cannot use as map keys: store the families as a list.
mod families_as_list {
    use std::collections::BTreeMap;

    use bytes::Bytes;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::ColumnFamilyDescriptor;

    pub fn serialize<S: Serializer>(
        m: &BTreeMap<Bytes, ColumnFamilyDescriptor>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        m.values().collect::<Vec<_>>().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<Bytes, ColumnFamilyDescriptor>, D::Error> {
        let v = Vec::<ColumnFamilyDescriptor>::deserialize(d)?;
        Ok(v.into_iter().map(|f| (f.name.clone(), f)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_defaults_are_hbase_defaults() {
        let f = ColumnFamilyDescriptor::new("cf");
        assert_eq!(f.max_versions, 1);
        assert_eq!(f.min_versions, 0);
        assert_eq!(f.ttl_seconds, 2_147_483_647);
        assert!(!f.has_ttl());
        assert_eq!(f.keep_deleted_cells, KeepDeletedCells::False);
        assert_eq!(f.bloom_filter, BloomType::Row);
        assert_eq!(f.block_size_bytes, 65_536);
        assert!(f.block_cache);
        assert!(!f.in_memory);
        assert_eq!(f.compression, Compression::None);
        assert_eq!(f.replication_scope, 0);
        assert!(!f.new_version_behavior);
    }

    #[test]
    fn sanity_checks() {
        assert!(ColumnFamilyDescriptor::new("cf").validate().is_ok());
        assert!(ColumnFamilyDescriptor::new("cf")
            .with_max_versions(0)
            .validate()
            .is_err());
        let e = ColumnFamilyDescriptor::new("cf")
            .with_max_versions(2)
            .with_min_versions(3);
        assert!(e
            .validate()
            .unwrap_err()
            .to_string()
            .contains("Minimum versions"));
        assert!(ColumnFamilyDescriptor::new("cf")
            .with_ttl_seconds(0)
            .validate()
            .is_err());
        assert!(ColumnFamilyDescriptor::new("cf")
            .with_block_size_bytes(512)
            .validate()
            .is_err());
        let t = TableName::parse("t").unwrap();
        assert!(TableDescriptor::new(&t, []).validate().is_err());
        // RELIABILITY.md D13: a family named twice is refused, not silently merged.
        let twice = TableDescriptor::with_families(
            &t,
            [
                ColumnFamilyDescriptor::new("f"),
                ColumnFamilyDescriptor::new("f"),
            ],
        );
        assert_eq!(
            twice.unwrap_err().to_string(),
            "Family 'f' already exists so cannot be added"
        );
        // RELIABILITY.md D9: MAX_FILESIZE below 2 MiB is refused unless checks are off.
        let mut small = TableDescriptor::new(&t, [ColumnFamilyDescriptor::new("cf")]);
        small.max_filesize_bytes = 1;
        let e = small.validate().unwrap_err();
        assert!(e.to_string().contains("MAX_FILESIZE"), "{e}");
        assert!(e.to_string().contains("(1) is too small"), "{e}");
        small.max_filesize_bytes = MAX_FILESIZE_LOWER_LIMIT_BYTES - 1;
        assert!(small.validate().is_err());
        small.max_filesize_bytes = MAX_FILESIZE_LOWER_LIMIT_BYTES;
        assert!(small.validate().is_ok());
        small.max_filesize_bytes = 1;
        small
            .configuration
            .insert("hbase.table.sanity.checks".into(), "false".into());
        assert!(small.validate().is_ok());
        assert!(
            TableDescriptor::new(&t, [ColumnFamilyDescriptor::new("cf")])
                .validate()
                .is_ok()
        );
        // No family: refused, unless the table turns the sanity checks off.
        let mut bare = TableDescriptor::new(&t, Vec::new());
        assert!(bare.validate().is_err());
        bare.configuration
            .insert("hbase.table.sanity.checks".into(), "false".into());
        assert!(bare.validate().is_ok());
    }

    #[test]
    fn durability_resolution() {
        assert_eq!(
            Durability::UseDefault.resolve(Durability::UseDefault),
            Durability::SyncWal
        );
        assert_eq!(
            Durability::UseDefault.resolve(Durability::AsyncWal),
            Durability::AsyncWal
        );
        assert_eq!(
            Durability::SkipWal.resolve(Durability::FsyncWal),
            Durability::SkipWal
        );
    }
}
