//! Descriptors as HBase's string maps: `ColumnFamilyDescriptor.getValues()` and
//! `setValue(key, value)`, and the same for tables. Front ends that carry schemas as
//! attribute maps (HBase's REST `TableSchema` and `ColumnSchema` models) read and write
//! descriptors through these.
//!
//! A family's map holds HBase 2's twelve defaulted attributes always (every new
//! `ColumnFamilyDescriptor` starts with them), then NEW_VERSION_BEHAVIOR when on, then the
//! METADATA values. A table's map holds only what differs from the defaults, as a table
//! made without attributes has an empty map in HBase 2.

use crate::descriptor::{
    BloomType, ColumnFamilyDescriptor, Compression, DataBlockEncoding, Durability,
    KeepDeletedCells, TableDescriptor, DEFAULT_MAX_FILESIZE_BYTES,
    DEFAULT_MEMSTORE_FLUSHSIZE_BYTES, TTL_FOREVER_SECONDS,
};
use crate::error::{Error, Result};

/// The attribute that is not among HBase 2's defaults (so HBase 1 and 2 descriptors compare
/// equal), shown only when set.
const NEW_VERSION_BEHAVIOR: &str = "NEW_VERSION_BEHAVIOR";

fn bad(key: &str, value: &str) -> Error {
    Error::IllegalArgument(format!("{key} => '{value}' is not a valid value of {key}"))
}

fn number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T> {
    value.trim().parse().map_err(|_| bad(key, value))
}

/// `Boolean.parseBoolean` is lenient (anything but "true" is false); a schema naming a
/// flag with a value that is neither is refused here instead, so a typo is not silently off.
fn flag(key: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(key, value)),
    }
}

fn yes(b: bool) -> String {
    b.to_string()
}

impl ColumnFamilyDescriptor {
    /// HBase's `getValues()`: the defaulted attributes, NEW_VERSION_BEHAVIOR when on, and
    /// the METADATA values, by key.
    #[must_use]
    pub fn values(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("BLOOMFILTER", self.bloom_filter.hbase_name().to_owned()),
            ("REPLICATION_SCOPE", self.replication_scope.to_string()),
            ("VERSIONS", self.max_versions.to_string()),
            ("MIN_VERSIONS", self.min_versions.to_string()),
            ("COMPRESSION", self.compression.hbase_name().to_owned()),
            ("TTL", self.ttl_seconds.to_string()),
            ("BLOCKSIZE", self.block_size_bytes.to_string()),
            ("IN_MEMORY", yes(self.in_memory)),
            ("BLOCKCACHE", yes(self.block_cache)),
            (
                "KEEP_DELETED_CELLS",
                self.keep_deleted_cells.hbase_name().to_owned(),
            ),
            (
                "DATA_BLOCK_ENCODING",
                self.data_block_encoding.hbase_name().to_owned(),
            ),
            ("INDEX_BLOCK_ENCODING", "NONE".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect::<Vec<_>>();
        if self.new_version_behavior {
            v.push((NEW_VERSION_BEHAVIOR.to_owned(), "true".to_owned()));
        }
        v.extend(self.metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
        v.sort();
        v
    }

    /// HBase's `setValue(key, value)`: a known attribute is parsed (keys in any case), any
    /// other key is kept as METADATA.
    ///
    /// # Errors
    /// `IllegalArgument` naming the attribute when its value does not parse.
    pub fn set_value(&mut self, key: &str, value: &str) -> Result<()> {
        match key.to_ascii_uppercase().as_str() {
            "VERSIONS" => self.max_versions = number(key, value)?,
            "MIN_VERSIONS" => self.min_versions = number(key, value)?,
            "TTL" => {
                self.ttl_seconds = if value.trim().eq_ignore_ascii_case("FOREVER") {
                    TTL_FOREVER_SECONDS
                } else {
                    number(key, value)?
                };
            }
            "BLOCKSIZE" => self.block_size_bytes = number(key, value)?,
            "REPLICATION_SCOPE" => self.replication_scope = number(key, value)?,
            "IN_MEMORY" => self.in_memory = flag(key, value)?,
            "BLOCKCACHE" => self.block_cache = flag(key, value)?,
            NEW_VERSION_BEHAVIOR => self.new_version_behavior = flag(key, value)?,
            "BLOOMFILTER" => {
                self.bloom_filter =
                    BloomType::from_hbase_name(value.trim()).ok_or_else(|| bad(key, value))?;
            }
            "COMPRESSION" => {
                self.compression =
                    Compression::from_hbase_name(value.trim()).ok_or_else(|| bad(key, value))?;
            }
            "DATA_BLOCK_ENCODING" => {
                self.data_block_encoding = DataBlockEncoding::from_hbase_name(value.trim())
                    .ok_or_else(|| bad(key, value))?;
            }
            "KEEP_DELETED_CELLS" => {
                self.keep_deleted_cells = KeepDeletedCells::from_hbase_name(value.trim())
                    .ok_or_else(|| bad(key, value))?;
            }
            // The only index block encoding HBase has.
            "INDEX_BLOCK_ENCODING" if value.trim().eq_ignore_ascii_case("NONE") => {}
            "INDEX_BLOCK_ENCODING" => return Err(bad(key, value)),
            _ => {
                self.metadata.insert(key.to_owned(), value.to_owned());
            }
        }
        Ok(())
    }
}

impl TableDescriptor {
    /// HBase's `getValues()` of a table: the attributes that differ from the defaults, and
    /// the METADATA values, by key.
    #[must_use]
    pub fn values(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        let mut put = |k: &str, val: String| v.push((k.to_owned(), val));
        if self.max_filesize_bytes != DEFAULT_MAX_FILESIZE_BYTES {
            put("MAX_FILESIZE", self.max_filesize_bytes.to_string());
        }
        if self.memstore_flushsize_bytes != DEFAULT_MEMSTORE_FLUSHSIZE_BYTES {
            put(
                "MEMSTORE_FLUSHSIZE",
                self.memstore_flushsize_bytes.to_string(),
            );
        }
        if self.read_only {
            put("READONLY", yes(true));
        }
        if self.durability != Durability::UseDefault {
            put("DURABILITY", self.durability.hbase_name().to_owned());
        }
        if !self.compaction_enabled {
            put("COMPACTION_ENABLED", yes(false));
        }
        if !self.split_enabled {
            put("SPLIT_ENABLED", yes(false));
        }
        if !self.merge_enabled {
            put("MERGE_ENABLED", yes(false));
        }
        v.extend(self.metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
        v.sort();
        v
    }

    /// HBase's `setValue(key, value)` of a table: a known attribute is parsed, IS_META and
    /// IS_ROOT (which older clients send and HBase derives from the name) are ignored, any
    /// other key is kept as METADATA.
    ///
    /// # Errors
    /// `IllegalArgument` naming the attribute when its value does not parse.
    pub fn set_value(&mut self, key: &str, value: &str) -> Result<()> {
        match key.to_ascii_uppercase().as_str() {
            "MAX_FILESIZE" => self.max_filesize_bytes = number(key, value)?,
            "MEMSTORE_FLUSHSIZE" => self.memstore_flushsize_bytes = number(key, value)?,
            "READONLY" => self.read_only = flag(key, value)?,
            "COMPACTION_ENABLED" => self.compaction_enabled = flag(key, value)?,
            "SPLIT_ENABLED" => self.split_enabled = flag(key, value)?,
            "MERGE_ENABLED" => self.merge_enabled = flag(key, value)?,
            "DURABILITY" => {
                self.durability =
                    Durability::from_hbase_name(value.trim()).ok_or_else(|| bad(key, value))?;
            }
            "IS_META" | "IS_ROOT" => {}
            _ => {
                self.metadata.insert(key.to_owned(), value.to_owned());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_family_shows_hbase_2s_twelve_defaults() {
        let f = ColumnFamilyDescriptor::new("cf");
        let v = f.values();
        let keys: Vec<&str> = v.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "BLOCKCACHE",
                "BLOCKSIZE",
                "BLOOMFILTER",
                "COMPRESSION",
                "DATA_BLOCK_ENCODING",
                "INDEX_BLOCK_ENCODING",
                "IN_MEMORY",
                "KEEP_DELETED_CELLS",
                "MIN_VERSIONS",
                "REPLICATION_SCOPE",
                "TTL",
                "VERSIONS"
            ]
        );
        let get = |k: &str| v.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        assert_eq!(get("TTL"), Some("2147483647"));
        assert_eq!(get("KEEP_DELETED_CELLS"), Some("FALSE"));
        assert_eq!(get("BLOCKSIZE"), Some("65536"));
    }

    #[test]
    fn every_family_value_round_trips_through_set_value() {
        let mut f = ColumnFamilyDescriptor::new("cf");
        for (k, v) in [
            ("VERSIONS", "5"),
            ("min_versions", "1"),
            ("TTL", "86400"),
            ("BLOCKSIZE", "65537"),
            ("BLOOMFILTER", "rowcol"),
            ("COMPRESSION", "GZ"),
            ("IN_MEMORY", "true"),
            ("BLOCKCACHE", "false"),
            ("KEEP_DELETED_CELLS", "TRUE"),
            ("DATA_BLOCK_ENCODING", "FAST_DIFF"),
            ("REPLICATION_SCOPE", "1"),
            ("NEW_VERSION_BEHAVIOR", "true"),
            ("OWNER_NOTE", "kept"),
        ] {
            f.set_value(k, v).expect(k);
        }
        let mut g = ColumnFamilyDescriptor::new("cf");
        for (k, v) in f.values() {
            g.set_value(&k, &v).expect(&k);
        }
        assert_eq!(f, g);
        assert_eq!(f.max_versions, 5);
        assert_eq!(
            f.metadata.get("OWNER_NOTE").map(String::as_str),
            Some("kept")
        );
    }

    #[test]
    fn a_bad_value_is_refused_with_its_name_and_changes_nothing() {
        let mut f = ColumnFamilyDescriptor::new("cf");
        let before = f.clone();
        for (k, v) in [
            ("VERSIONS", "many"),
            ("BLOOMFILTER", "SOMETIMES"),
            ("IN_MEMORY", "yes"),
            ("TTL", "-1"),
        ] {
            let e = f.set_value(k, v).expect_err(k).to_string();
            assert!(e.contains(k) && e.contains(v), "{e}");
        }
        assert_eq!(f, before);
    }

    #[test]
    fn a_table_shows_only_what_differs_and_round_trips() {
        let t = TableDescriptor::new(
            &crate::TableName::parse("t").expect("name"),
            vec![ColumnFamilyDescriptor::new("cf")],
        );
        assert!(t.values().is_empty());
        let mut u = t.clone();
        u.set_value("READONLY", "true").expect("readonly");
        u.set_value("DURABILITY", "ASYNC_WAL").expect("durability");
        u.set_value("MAX_FILESIZE", "1073741824").expect("size");
        u.set_value("IS_META", "false").expect("ignored");
        u.set_value("NOTE", "x").expect("metadata");
        let mut w = t.clone();
        for (k, v) in u.values() {
            w.set_value(&k, &v).expect(&k);
        }
        assert_eq!(u, w);
        assert_eq!(u.values().len(), 4);
        assert!(u.set_value("SPLIT_ENABLED", "maybe").is_err());
    }
}
