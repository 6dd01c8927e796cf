//! Family and table options: read from `{NAME => 'f', VERSIONS => 5, ...}` hashes and printed
//! as `describe` prints them (ColumnFamilyDescriptor.toString in HBase 2.5).

use basalt_model::descriptor::{
    DEFAULT_MAX_FILESIZE_BYTES, DEFAULT_MEMSTORE_FLUSHSIZE_BYTES, TTL_FOREVER_SECONDS,
};
use basalt_model::{
    BloomType, ColumnFamilyDescriptor, Compression, DataBlockEncoding, Durability,
    KeepDeletedCells, TableDescriptor,
};

use crate::args::{boolean, int, key_name};
use crate::parser::Value;
use crate::ShellError;

fn upper(v: &Value) -> String {
    v.to_s().to_ascii_uppercase()
}

fn bad(what: &str, v: &Value) -> ShellError {
    ShellError::usage(format!("{what} is not valid: {v}"))
}

/// A family attribute HBase 2.5 does not count among its reserved keys: set, it is kept and
/// printed with the METADATA values (`ColumnFamilyDescriptorBuilder.RESERVED_KEYWORDS` leaves
/// it out so that HBase 1 and 2 descriptors compare equal), and unset it is not printed.
const NEW_VERSION_BEHAVIOR: &str = "NEW_VERSION_BEHAVIOR";

fn small(v: &Value, what: &str) -> Result<u32, ShellError> {
    u32::try_from(int(v, what)?).map_err(|_| bad(what, v))
}

/// Applies one family option; false when `key` is not a family option.
pub fn apply_family_option(
    f: &mut ColumnFamilyDescriptor,
    key: &str,
    v: &Value,
) -> Result<bool, ShellError> {
    match key {
        "VERSIONS" => f.max_versions = small(v, key)?,
        "MIN_VERSIONS" => f.min_versions = small(v, key)?,
        "TTL" => {
            f.ttl_seconds = match upper(v).as_str() {
                "FOREVER" => TTL_FOREVER_SECONDS,
                _ => small(v, key)?,
            }
        }
        "KEEP_DELETED_CELLS" => {
            f.keep_deleted_cells =
                KeepDeletedCells::from_hbase_name(&v.to_s()).ok_or_else(|| bad(key, v))?;
        }
        "BLOOMFILTER" => {
            f.bloom_filter = BloomType::from_hbase_name(&v.to_s()).ok_or_else(|| bad(key, v))?;
        }
        "COMPRESSION" => {
            f.compression = Compression::from_hbase_name(&v.to_s()).ok_or_else(|| bad(key, v))?;
        }
        "DATA_BLOCK_ENCODING" => {
            f.data_block_encoding =
                DataBlockEncoding::from_hbase_name(&v.to_s()).ok_or_else(|| bad(key, v))?;
        }
        "BLOCKSIZE" => f.block_size_bytes = small(v, key)?,
        "BLOCKCACHE" => f.block_cache = boolean(v, key)?,
        "IN_MEMORY" => f.in_memory = boolean(v, key)?,
        "REPLICATION_SCOPE" => f.replication_scope = small(v, key)?,
        NEW_VERSION_BEHAVIOR => f.new_version_behavior = boolean(v, key)?,
        "CONFIGURATION" | "METADATA" => {
            let Value::Hash(pairs) = v else {
                return Err(bad(key, v));
            };
            for (k, v) in pairs {
                let k = key_name(k);
                if key == "CONFIGURATION" {
                    f.configuration.insert(k, v.to_s());
                } else if k == NEW_VERSION_BEHAVIOR {
                    // HBase keeps the attribute among the metadata values, so setting it
                    // there turns it on (`Boolean.parseBoolean`: anything but "true" is off).
                    f.new_version_behavior = v.to_s().eq_ignore_ascii_case("true");
                } else {
                    f.metadata.insert(k, v.to_s());
                }
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Applies one table attribute; false when `key` is not one.
pub fn apply_table_option(
    t: &mut TableDescriptor,
    key: &str,
    v: &Value,
) -> Result<bool, ShellError> {
    let size = |v: &Value| u64::try_from(int(v, key)?).map_err(|_| bad(key, v));
    match key {
        "MAX_FILESIZE" => t.max_filesize_bytes = size(v)?,
        "MEMSTORE_FLUSHSIZE" => t.memstore_flushsize_bytes = size(v)?,
        "READONLY" => t.read_only = boolean(v, key)?,
        "COMPACTION_ENABLED" => t.compaction_enabled = boolean(v, key)?,
        "SPLIT_ENABLED" => t.split_enabled = boolean(v, key)?,
        "MERGE_ENABLED" => t.merge_enabled = boolean(v, key)?,
        "DURABILITY" => {
            t.durability = Durability::from_hbase_name(&v.to_s()).ok_or_else(|| bad(key, v))?;
        }
        "CONFIGURATION" | "METADATA" => {
            let Value::Hash(pairs) = v else {
                return Err(bad(key, v));
            };
            let map = if key == "CONFIGURATION" {
                &mut t.configuration
            } else {
                &mut t.metadata
            };
            for (k, v) in pairs {
                map.insert(key_name(k), v.to_s());
            }
        }
        "OWNER" | "NORMALIZATION_ENABLED" | "REGION_REPLICATION" | "PRIORITY" => {
            t.metadata.insert(key.to_owned(), v.to_s());
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `describe`'s line for a family.
#[must_use]
pub fn family_line(f: &ColumnFamilyDescriptor) -> String {
    let yes = |b: bool| if b { "true" } else { "false" };
    let mut parts = vec![
        format!("NAME => '{}'", String::from_utf8_lossy(&f.name)),
        "INDEX_BLOCK_ENCODING => 'NONE'".to_owned(),
        format!("VERSIONS => '{}'", f.max_versions),
        format!(
            "KEEP_DELETED_CELLS => '{}'",
            f.keep_deleted_cells.hbase_name()
        ),
        format!(
            "DATA_BLOCK_ENCODING => '{}'",
            f.data_block_encoding.hbase_name()
        ),
        format!("TTL => '{}'", ttl_text(f.ttl_seconds)),
        format!("MIN_VERSIONS => '{}'", f.min_versions),
        format!("REPLICATION_SCOPE => '{}'", f.replication_scope),
        format!("BLOOMFILTER => '{}'", f.bloom_filter.hbase_name()),
        format!("IN_MEMORY => '{}'", yes(f.in_memory)),
        format!("COMPRESSION => '{}'", f.compression.hbase_name()),
        format!("BLOCKCACHE => '{}'", yes(f.block_cache)),
        format!(
            "BLOCKSIZE => '{}'",
            size_text(u64::from(f.block_size_bytes))
        ),
    ];
    if !f.configuration.is_empty() {
        parts.push(format!("CONFIGURATION => {}", map_text(&f.configuration)));
    }
    let mut metadata = f.metadata.clone();
    if f.new_version_behavior {
        metadata.insert(NEW_VERSION_BEHAVIOR.to_owned(), "true".to_owned());
    }
    if !metadata.is_empty() {
        parts.push(format!("METADATA => {}", map_text(&metadata)));
    }
    format!("{{{}}}", parts.join(", "))
}

/// `describe`'s table line: the name, then the attributes that differ from the defaults.
#[must_use]
pub fn table_line(t: &TableDescriptor) -> String {
    let mut attrs = Vec::new();
    if t.max_filesize_bytes != DEFAULT_MAX_FILESIZE_BYTES {
        attrs.push(format!("MAX_FILESIZE => '{}'", t.max_filesize_bytes));
    }
    if t.read_only {
        attrs.push("READONLY => 'true'".to_owned());
    }
    if t.memstore_flushsize_bytes != DEFAULT_MEMSTORE_FLUSHSIZE_BYTES {
        attrs.push(format!(
            "MEMSTORE_FLUSHSIZE => '{}'",
            t.memstore_flushsize_bytes
        ));
    }
    if t.durability != Durability::UseDefault {
        attrs.push(format!("DURABILITY => '{}'", t.durability.hbase_name()));
    }
    for (flag, name) in [
        (t.compaction_enabled, "COMPACTION_ENABLED"),
        (t.split_enabled, "SPLIT_ENABLED"),
        (t.merge_enabled, "MERGE_ENABLED"),
    ] {
        if !flag {
            attrs.push(format!("{name} => 'false'"));
        }
    }
    if !t.configuration.is_empty() {
        attrs.push(format!("CONFIGURATION => {}", map_text(&t.configuration)));
    }
    if !t.metadata.is_empty() {
        attrs.push(format!("METADATA => {}", map_text(&t.metadata)));
    }
    let name = t.table_name().to_string();
    if attrs.is_empty() {
        return name;
    }
    format!("{name}, {{TABLE_ATTRIBUTES => {{{}}}}}", attrs.join(", "))
}

fn map_text(m: &std::collections::BTreeMap<String, String>) -> String {
    let items: Vec<String> = m.iter().map(|(k, v)| format!("'{k}' => '{v}'")).collect();
    format!("{{{}}}", items.join(", "))
}

/// A TTL as HBase's PrettyPrinter writes it: `FOREVER`, `30 SECONDS`,
/// `2592000 SECONDS (30 DAYS)`, `90061 SECONDS (1 DAY 1 HOUR 1 MINUTE 1 SECOND)`.
#[must_use]
pub fn ttl_text(secs: u32) -> String {
    if secs == TTL_FOREVER_SECONDS {
        return "FOREVER".to_owned();
    }
    if secs < 60 {
        return format!("{secs} SECONDS");
    }
    let parts = [
        (secs / 86_400, "DAY"),
        (secs % 86_400 / 3600, "HOUR"),
        (secs % 3600 / 60, "MINUTE"),
        (secs % 60, "SECOND"),
    ];
    let words: Vec<String> = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n} {unit}{}", if *n > 1 { "S" } else { "" }))
        .collect();
    format!("{secs} SECONDS ({})", words.join(" "))
}

/// A byte size as HBase 2.4+ prints BLOCKSIZE: `65536 B (64KB)`.
#[must_use]
pub fn size_text(n: u64) -> String {
    let units = [(1u64 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "KB")];
    for (size, unit) in units {
        if n >= size && n.is_multiple_of(size) {
            return format!("{n} B ({}{unit})", n / size);
        }
    }
    format!("{n} B ({n}B)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_and_sizes_print_as_hbase() {
        assert_eq!(ttl_text(TTL_FOREVER_SECONDS), "FOREVER");
        assert_eq!(ttl_text(30), "30 SECONDS");
        assert_eq!(ttl_text(2_592_000), "2592000 SECONDS (30 DAYS)");
        assert_eq!(
            ttl_text(90_061),
            "90061 SECONDS (1 DAY 1 HOUR 1 MINUTE 1 SECOND)"
        );
        assert_eq!(size_text(65_536), "65536 B (64KB)");
        assert_eq!(size_text(1000), "1000 B (1000B)");
    }

    #[test]
    fn a_default_family_describes_as_hbase_2_5() {
        let f = ColumnFamilyDescriptor::new("f1");
        assert_eq!(
            family_line(&f),
            "{NAME => 'f1', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '1', KEEP_DELETED_CELLS => 'FALSE', \
             DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', \
             BLOOMFILTER => 'ROW', IN_MEMORY => 'false', COMPRESSION => 'NONE', BLOCKCACHE => 'true', \
             BLOCKSIZE => '65536 B (64KB)'}"
        );
    }

    #[test]
    fn new_version_behavior_shows_among_the_metadata_only_when_on() {
        let mut f = ColumnFamilyDescriptor::new("f1");
        f.metadata.insert("OWNER".into(), "x".into());
        assert!(family_line(&f).ends_with("METADATA => {'OWNER' => 'x'}}"));
        let f = f.with_new_version_behavior(true);
        assert!(family_line(&f)
            .ends_with("METADATA => {'NEW_VERSION_BEHAVIOR' => 'true', 'OWNER' => 'x'}}"));
    }
}
