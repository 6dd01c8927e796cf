//! Regions as HBase names and describes them: the key range of a region, its region name
//! (`table,start key,id.encoded.`), its encoded name, and the serialized `RegionInfo` and
//! `TableState` that `hbase:meta` holds (a `PBUF` magic and a protobuf message, as HBase
//! writes them, so tools that decode HBase's catalog can decode Basalt's).

use bytes::{BufMut, Bytes, BytesMut};
use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

use crate::TableName;

/// Where a region sits in its table: `[start_key, end_key)`; empty keys mean the start or end
/// of the table. `id` is the region id HBase calls `regionId`: the creation time in ms, made
/// unique within the database.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RegionInfo {
    pub id: u64,
    pub start_key: Bytes,
    pub end_key: Bytes,
}

/// A region's load, as the status page and metrics show it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegionLoad {
    pub store_files: usize,
    pub store_file_bytes: u64,
    pub memstore_bytes: u64,
    /// Reads (gets and region scans) served since the region opened.
    pub read_requests: u64,
    /// Writes (edits) applied since the region opened.
    pub write_requests: u64,
    /// Why the region failed to open, when it did (HBase's FAILED_OPEN): it serves nothing.
    pub failed_open: Option<String>,
}

/// The magic HBase puts before every protobuf value in its catalog.
pub const PB_MAGIC: &[u8; 4] = b"PBUF";

impl RegionInfo {
    /// Whether `row` falls in `[start_key, end_key)`.
    #[must_use]
    pub fn contains(&self, row: &[u8]) -> bool {
        row >= &self.start_key[..] && (self.end_key.is_empty() || row < &self.end_key[..])
    }

    /// HBase's region name: `table,start key,id.encoded name.` (the `hbase:meta` row key).
    #[must_use]
    pub fn region_name(&self, table: &TableName) -> Bytes {
        let mut b = self.name_prefix(table);
        b.put_u8(b'.');
        b.put_slice(self.encoded_name(table).as_bytes());
        b.put_u8(b'.');
        b.freeze()
    }

    /// The encoded name: the MD5 (hex) of `table,start key,id`, HBase's short region id used
    /// in directory names, logs and shell commands such as `merge_region`.
    #[must_use]
    pub fn encoded_name(&self, table: &TableName) -> String {
        // Checked on every call that names its region, so no formatting per byte.
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let digest = Md5::digest(self.name_prefix(table));
        let mut name = String::with_capacity(2 * digest.len());
        for b in digest {
            name.push(char::from(HEX[usize::from(b >> 4)]));
            name.push(char::from(HEX[usize::from(b & 0xf)]));
        }
        name
    }

    /// The region name as text, non-printable bytes escaped (`Bytes.toStringBinary`).
    #[must_use]
    pub fn region_name_string(&self, table: &TableName) -> String {
        crate::bytes_fmt::to_string_binary(&self.region_name(table))
    }

    fn name_prefix(&self, table: &TableName) -> BytesMut {
        let t = table.to_string();
        let id = self.id.to_string();
        let mut b = BytesMut::with_capacity(t.len() + self.start_key.len() + id.len() + 40);
        b.put_slice(t.as_bytes());
        b.put_u8(b',');
        b.put_slice(&self.start_key);
        b.put_u8(b',');
        b.put_slice(id.as_bytes());
        b
    }
}

/// The `info:regioninfo` value of a region's `hbase:meta` row: `PBUF` and HBase's
/// `RegionInfo` protobuf (region id, table name, start and end key, offline, split).
#[must_use]
pub fn encode_meta_region_info(
    table: &TableName,
    info: &RegionInfo,
    offline: bool,
    split: bool,
) -> Bytes {
    let mut tn = Vec::new();
    pb_bytes(&mut tn, 1, table.namespace().as_bytes());
    pb_bytes(&mut tn, 2, table.qualifier().as_bytes());
    let mut m = Vec::from(&PB_MAGIC[..]);
    pb_varint_field(&mut m, 1, info.id);
    pb_bytes(&mut m, 2, &tn);
    pb_bytes(&mut m, 3, &info.start_key);
    pb_bytes(&mut m, 4, &info.end_key);
    pb_varint_field(&mut m, 5, u64::from(offline));
    pb_varint_field(&mut m, 6, u64::from(split));
    pb_varint_field(&mut m, 7, 0);
    Bytes::from(m)
}

/// What [`encode_meta_region_info`] wrote: table, region, offline and split flags. `None`
/// for anything else; never panics.
#[must_use]
pub fn decode_meta_region_info(v: &[u8]) -> Option<(TableName, RegionInfo, bool, bool)> {
    let mut r = PbReader(v.strip_prefix(&PB_MAGIC[..])?);
    let (mut id, mut table, mut start, mut end) = (None, None, Bytes::new(), Bytes::new());
    let (mut offline, mut split) = (false, false);
    while let Some((field, value)) = r.field()? {
        match (field, value) {
            (1, PbValue::Varint(n)) => id = Some(n),
            (2, PbValue::Bytes(b)) => {
                let mut t = PbReader(b);
                let (mut ns, mut q) = (None, None);
                while let Some((f, v)) = t.field()? {
                    match (f, v) {
                        (1, PbValue::Bytes(b)) => ns = Some(std::str::from_utf8(b).ok()?),
                        (2, PbValue::Bytes(b)) => q = Some(std::str::from_utf8(b).ok()?),
                        _ => {}
                    }
                }
                table = Some(TableName::new(ns?, q?).ok()?);
            }
            (3, PbValue::Bytes(b)) => start = Bytes::copy_from_slice(b),
            (4, PbValue::Bytes(b)) => end = Bytes::copy_from_slice(b),
            (5, PbValue::Varint(n)) => offline = n != 0,
            (6, PbValue::Varint(n)) => split = n != 0,
            _ => {}
        }
    }
    let info = RegionInfo {
        id: id?,
        start_key: start,
        end_key: end,
    };
    Some((table?, info, offline, split))
}

/// The `table:state` value of a table's `hbase:meta` row: `PBUF` and HBase's `TableState`
/// (`ENABLED` = 0, `DISABLED` = 1).
#[must_use]
pub fn encode_meta_table_state(enabled: bool) -> Bytes {
    let mut m = Vec::from(&PB_MAGIC[..]);
    pb_varint_field(&mut m, 1, u64::from(!enabled));
    Bytes::from(m)
}

fn pb_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn pb_varint_field(out: &mut Vec<u8>, field: u64, n: u64) {
    pb_varint(out, field << 3);
    pb_varint(out, n);
}

fn pb_bytes(out: &mut Vec<u8>, field: u64, b: &[u8]) {
    pb_varint(out, (field << 3) | 2);
    pb_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

enum PbValue<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// A minimal protobuf reader: varint and length-delimited fields, others refused.
struct PbReader<'a>(&'a [u8]);

impl<'a> PbReader<'a> {
    fn varint(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.0.split_first()?;
            self.0 = rest;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    /// The next field, `Some(None)` at the end, `None` when malformed.
    fn field(&mut self) -> Option<Option<(u64, PbValue<'a>)>> {
        if self.0.is_empty() {
            return Some(None);
        }
        let tag = self.varint()?;
        let value = match tag & 7 {
            0 => PbValue::Varint(self.varint()?),
            2 => {
                let len = usize::try_from(self.varint()?).ok()?;
                if len > self.0.len() {
                    return None;
                }
                let (b, rest) = self.0.split_at(len);
                self.0 = rest;
                PbValue::Bytes(b)
            }
            _ => return None,
        };
        Some(Some((tag >> 3, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(start: &'static [u8], end: &'static [u8]) -> RegionInfo {
        RegionInfo {
            id: 1_700_000_000_000,
            start_key: Bytes::from_static(start),
            end_key: Bytes::from_static(end),
        }
    }

    #[test]
    fn region_names_follow_hbase() {
        let t = TableName::parse("t1").unwrap();
        let r = info(b"row\x01", b"");
        let enc = r.encoded_name(&t);
        // MD5 of "t1,row\x01,1700000000000", as HBase computes it.
        assert_eq!(enc, "9219bfa9fc2a1685fbb29a46e9c96d03");
        assert_eq!(
            r.region_name_string(&t),
            format!("t1,row\\x01,1700000000000.{enc}.")
        );
        let ns = TableName::parse("ns:t").unwrap();
        assert!(r.region_name(&ns).starts_with(b"ns:t,row"));
    }

    #[test]
    fn meta_region_info_round_trips() {
        let t = TableName::parse("ns:tab").unwrap();
        let r = info(b"a", b"m\xff");
        for (offline, split) in [(false, false), (true, true)] {
            let v = encode_meta_region_info(&t, &r, offline, split);
            assert!(v.starts_with(b"PBUF"));
            let (t2, r2, o2, s2) = decode_meta_region_info(&v).unwrap();
            assert_eq!((t2, r2, o2, s2), (t.clone(), r.clone(), offline, split));
        }
    }

    #[test]
    fn meta_decoder_refuses_garbage_without_panicking() {
        let t = TableName::parse("t").unwrap();
        let v = encode_meta_region_info(&t, &info(b"", b""), false, false);
        for cut in 0..v.len() {
            let _ = decode_meta_region_info(&v[..cut]);
        }
        assert!(decode_meta_region_info(b"PBUF\xff\xff\xff").is_none());
        assert!(decode_meta_region_info(b"nope").is_none());
    }

    #[test]
    fn table_state_is_hbase_enum() {
        assert_eq!(&encode_meta_table_state(true)[..], b"PBUF\x08\x00");
        assert_eq!(&encode_meta_table_state(false)[..], b"PBUF\x08\x01");
    }
}
