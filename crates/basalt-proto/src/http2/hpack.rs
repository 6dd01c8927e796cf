//! HPACK (RFC 7541): header blocks decoded, and encoded for answers and for requests.
//!
//! The decoder keeps the dynamic table the peer's encoder fills, bounded by the size this
//! side announces (`SETTINGS_HEADER_TABLE_SIZE`, 4,096 bytes by default); a block that
//! refers past it, or grows it past that bound, is a compression error, which ends the
//! connection.
//!
//! The server's answers are written by [`put_status`] and [`put_field`], which never
//! index: every field is a literal without indexing (a static name's index where the table
//! has the name), so they keep no state, and the peer's table size never matters to them.
//! Answers' heads are two or three short fields.
//!
//! The client's requests are written by an [`Encoder`]: the fields every call of a
//! connection repeats (its authority, content type, method paths) go into the peer's
//! dynamic table the first time and are named by one byte after that; what changes from
//! call to call (a deadline) is a plain literal. Nothing is Huffman-coded: the peer reads
//! each string where it lies.
//!
//! # Invariants
//! - `Decoder::size` is the sum of the dynamic table's entries' sizes (name, value and 32
//!   bytes each), and never exceeds `max_size`, which never exceeds `limit`.
//! - `Encoder::added` is, oldest first, exactly the dynamic table the peer's decoder holds
//!   once it has read every block written: the encoder adds only while the table has room
//!   (so the decoder never evicts on its own), and evicts as the decoder does when the
//!   peer's limit shrinks.

use std::collections::VecDeque;

use bytes::{BufMut, Bytes};

use super::huffman;

/// The static table's entries that have a value are its first sixteen; the rest are names.
const STATIC_WITH_VALUES: usize = 16;

/// The static table (RFC 7541 appendix A), index 1 first.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("via", ""),
    ("vary", ""),
    ("www-authenticate", ""),
];

/// What an entry of the dynamic table costs beyond its name and value (RFC 7541 4.1).
const ENTRY_OVERHEAD: usize = 32;

/// One decoded header field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: Bytes,
    pub value: Bytes,
}

impl Field {
    /// What the field counts toward a header list's size (RFC 7540 6.5.2).
    pub fn size(&self) -> usize {
        self.name.len() + self.value.len() + ENTRY_OVERHEAD
    }
}

/// The decoding side of one connection's header compression.
#[derive(Debug)]
pub struct Decoder {
    /// The dynamic table, newest entry first.
    table: VecDeque<Field>,
    size: usize,
    /// The table's size as the peer's encoder last set it.
    max_size: usize,
    /// The largest size the peer may set (what this side announced).
    limit: usize,
    /// Scratch for Huffman-coded strings.
    scratch: Vec<u8>,
    /// How many times a block changed the dynamic table (an insert or a size update).
    changes: u64,
}

impl Decoder {
    pub fn new(limit: usize) -> Decoder {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max_size: limit,
            limit,
            scratch: Vec::new(),
            changes: 0,
        }
    }

    /// A count that moves whenever a block changes the dynamic table. While it stands
    /// still, a block decodes to the fields an identical block decoded to before: a block's
    /// fields depend only on its bytes and the table.
    #[must_use]
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Decodes the header block `block`, handing each field to `field` in order.
    ///
    /// # Errors
    /// The block is malformed: an index past the tables, a truncated integer or string, a bad
    /// Huffman string, or a table size update past the limit or after a field. The
    /// connection must end (its table can no longer be trusted).
    pub fn decode(&mut self, block: &Bytes, mut field: impl FnMut(Field)) -> Result<(), String> {
        let mut at = 0;
        let mut fields = 0_usize;
        while at < block.len() {
            let first = block[at];
            if first & 0x80 != 0 {
                let index = integer(block, &mut at, 7)?;
                field(self.entry(index)?);
            } else if first & 0xc0 == 0x40 {
                let decoded = self.literal(block, &mut at, 6)?;
                self.insert(decoded.clone());
                field(decoded);
            } else if first & 0xe0 == 0x20 {
                if fields > 0 {
                    return Err("a table size update after a header field".to_owned());
                }
                let size = integer(block, &mut at, 5)?;
                if size > self.limit {
                    return Err(format!(
                        "a table size of {size} bytes, over the {} announced",
                        self.limit
                    ));
                }
                self.max_size = size;
                self.evict_to(size);
                self.changes += 1;
                continue;
            } else {
                // Without indexing (0000) or never indexed (0001): a 4-bit prefix.
                field(self.literal(block, &mut at, 4)?);
            }
            fields += 1;
        }
        Ok(())
    }

    /// The field at `index` of the static then the dynamic table.
    fn entry(&self, index: usize) -> Result<Field, String> {
        match index {
            0 => Err("a header field of index 0".to_owned()),
            1..=61 => {
                let (name, value) = STATIC[index - 1];
                Ok(Field {
                    name: Bytes::from_static(name.as_bytes()),
                    value: Bytes::from_static(value.as_bytes()),
                })
            }
            _ => self.table.get(index - 62).cloned().ok_or_else(|| {
                format!(
                    "a header field of index {index}, past the {} the tables hold",
                    61 + self.table.len()
                )
            }),
        }
    }

    /// A literal field whose name index has a `prefix`-bit prefix (0: a literal name).
    fn literal(&mut self, block: &Bytes, at: &mut usize, prefix: u8) -> Result<Field, String> {
        let index = integer(block, at, prefix)?;
        let name = if index == 0 {
            self.string(block, at)?
        } else {
            self.entry(index)?.name
        };
        let value = self.string(block, at)?;
        Ok(Field { name, value })
    }

    /// A string literal: its bytes where they lie in `block`, or decoded from Huffman.
    fn string(&mut self, block: &Bytes, at: &mut usize) -> Result<Bytes, String> {
        let huffman = block
            .get(*at)
            .ok_or("a header block ends before a string")?
            & 0x80
            != 0;
        let len = integer(block, at, 7)?;
        let end = at
            .checked_add(len)
            .filter(|&end| end <= block.len())
            .ok_or_else(|| format!("a string of {len} bytes runs past its header block"))?;
        let raw = block.slice(*at..end);
        *at = end;
        if !huffman {
            return Ok(raw);
        }
        self.scratch.clear();
        huffman::decode(&raw, &mut self.scratch)?;
        Ok(Bytes::copy_from_slice(&self.scratch))
    }

    /// Adds `field` to the dynamic table, evicting the oldest entries to make room; a field
    /// larger than the whole table empties it and is not kept (RFC 7541 4.4).
    fn insert(&mut self, field: Field) {
        self.changes += 1;
        let size = field.size();
        if size > self.max_size {
            self.table.clear();
            self.size = 0;
            return;
        }
        self.evict_to(self.max_size - size);
        self.size += size;
        self.table.push_front(field);
    }

    fn evict_to(&mut self, size: usize) {
        while self.size > size {
            let Some(oldest) = self.table.pop_back() else {
                break;
            };
            self.size -= oldest.size();
        }
    }
}

/// An integer of `prefix` bits (RFC 7541 5.1) at `*at`, which moves past it.
fn integer(block: &[u8], at: &mut usize, prefix: u8) -> Result<usize, String> {
    let truncated = || "a header block ends inside an integer".to_owned();
    let mask = (1_usize << prefix) - 1;
    let mut value = usize::from(*block.get(*at).ok_or_else(truncated)?) & mask;
    *at += 1;
    if value < mask {
        return Ok(value);
    }
    let mut shift = 0_u32;
    loop {
        let byte = *block.get(*at).ok_or_else(truncated)?;
        *at += 1;
        // Four continuation bytes reach 2^28, past any size or index a peer may name.
        if shift > 21 {
            return Err("an integer too large for a header block".to_owned());
        }
        value += usize::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// Appends `value` as an integer of `prefix` bits after the pattern `first`.
fn put_integer(out: &mut Vec<u8>, first: u8, prefix: u8, value: usize) {
    let mask = (1_usize << prefix) - 1;
    if value < mask {
        // Below the mask, so within the prefix's bits.
        out.put_u8(first | u8::try_from(value).unwrap_or_default());
        return;
    }
    out.put_u8(first | u8::try_from(mask).unwrap_or_default());
    let mut rest = value - mask;
    while rest >= 0x80 {
        out.put_u8(u8::try_from(rest & 0x7f).unwrap_or_default() | 0x80);
        rest >>= 7;
    }
    out.put_u8(u8::try_from(rest).unwrap_or_default());
}

/// Appends a string literal, not Huffman-coded.
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_integer(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Appends `:status`: the static table's field where it has the code, else a literal.
pub fn put_status(out: &mut Vec<u8>, status: u16) {
    let indexed = match status {
        200 => 8,
        204 => 9,
        206 => 10,
        304 => 11,
        400 => 12,
        404 => 13,
        500 => 14,
        _ => 0,
    };
    if indexed > 0 {
        put_integer(out, 0x80, 7, indexed);
    } else {
        put_integer(out, 0, 4, 8);
        put_string(out, status.to_string().as_bytes());
    }
}

/// Appends the field `name: value` as a literal without indexing, naming the static table's
/// entry when it has the name.
pub fn put_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    put_literal(out, 0, 4, name, value);
}

/// Appends a literal field after the pattern `first`, its name index in `prefix` bits:
/// the static table's entry when it has the name, else the name as a string.
fn put_literal(out: &mut Vec<u8>, first: u8, prefix: u8, name: &[u8], value: &[u8]) {
    match STATIC.iter().position(|(n, _)| n.as_bytes() == name) {
        Some(i) => put_integer(out, first, prefix, i + 1),
        None => {
            out.put_u8(first);
            put_string(out, name);
        }
    }
    put_string(out, value);
}

/// The encoding side of a client's requests on one connection (see the module's notes).
#[derive(Debug)]
pub struct Encoder {
    /// The fields added to the peer's dynamic table, oldest first.
    added: Vec<Field>,
    /// The sum of `added`'s sizes.
    size: usize,
    /// The largest table the peer's decoder allows (its `SETTINGS_HEADER_TABLE_SIZE`).
    max_size: usize,
    /// A table size update owed at the start of the next block: the peer's limit shrank.
    resized: bool,
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder {
            added: Vec::new(),
            size: 0,
            max_size: DEFAULT_TABLE_SIZE,
            resized: false,
        }
    }
}

/// The dynamic table's size before the peer's settings say otherwise (RFC 9113 6.5.2).
pub const DEFAULT_TABLE_SIZE: usize = 4096;

impl Encoder {
    /// Takes the peer's `SETTINGS_HEADER_TABLE_SIZE`. A smaller table than the one in use
    /// evicts the oldest entries here as the peer's decoder will on the update that the
    /// next block starts with.
    pub fn set_max_size(&mut self, max_size: usize) {
        if max_size < self.max_size {
            self.resized = true;
            while self.size > max_size {
                let oldest = self.added.remove(0);
                self.size -= oldest.size();
            }
        }
        self.max_size = max_size;
    }

    /// Starts a header block: writes the table size update the peer is owed, if any.
    pub fn begin(&mut self, out: &mut Vec<u8>) {
        if std::mem::take(&mut self.resized) {
            put_integer(out, 0x20, 5, self.max_size);
        }
    }

    /// Appends `name: value`. A field that `repeats` on later blocks is named by its index
    /// once it is in the dynamic table, and added to it, while it has room, the first time.
    pub fn field(&mut self, out: &mut Vec<u8>, name: &[u8], value: &[u8], repeats: bool) {
        // A repeated field is found among the few this connection added (every call after
        // the first), before the static table is searched.
        if repeats {
            if let Some(i) = self
                .added
                .iter()
                .rposition(|f| f.name == name && f.value == value)
            {
                // The newest entry is index 62; each added after this one moves it by one.
                put_integer(out, 0x80, 7, 62 + self.added.len() - 1 - i);
                return;
            }
        }
        if let Some(i) = STATIC[..STATIC_WITH_VALUES]
            .iter()
            .position(|&(n, v)| n.as_bytes() == name && v.as_bytes() == value)
        {
            put_integer(out, 0x80, 7, i + 1);
            return;
        }
        if !repeats {
            put_field(out, name, value);
            return;
        }
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        if self.size + size > self.max_size {
            put_field(out, name, value);
            return;
        }
        // A literal with incremental indexing: the decoder adds it to its table.
        put_literal(out, 0x40, 6, name, value);
        self.size += size;
        self.added.push(Field {
            name: Bytes::copy_from_slice(name),
            value: Bytes::copy_from_slice(value),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Bytes {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect::<Vec<u8>>()
            .into()
    }

    fn decode(decoder: &mut Decoder, block: &Bytes) -> Result<Vec<(String, String)>, String> {
        let mut fields = Vec::new();
        decoder.decode(block, |f| {
            fields.push((
                String::from_utf8(f.name.to_vec()).unwrap(),
                String::from_utf8(f.value.to_vec()).unwrap(),
            ));
        })?;
        Ok(fields)
    }

    fn pairs(fields: &[(&str, &str)]) -> Vec<(String, String)> {
        fields
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// RFC 7541 C.4: three requests with Huffman coding, one decoder; the dynamic table
    /// after each holds what the RFC lists.
    #[test]
    fn the_rfc_request_examples_decode_with_their_table() {
        let mut d = Decoder::new(4096);
        let first = decode(&mut d, &hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff")).unwrap();
        assert_eq!(
            first,
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
            ])
        );
        assert_eq!(d.size, 57);
        let second = decode(&mut d, &hex("8286 84be 5886 a8eb 1064 9cbf")).unwrap();
        assert_eq!(
            second,
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
                ("cache-control", "no-cache"),
            ])
        );
        assert_eq!(d.size, 110);
        let third = decode(
            &mut d,
            &hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"),
        )
        .unwrap();
        assert_eq!(
            third,
            pairs(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ])
        );
        assert_eq!(d.size, 164);
        assert_eq!(d.table.len(), 3);
        assert_eq!(d.table[0].name, "custom-key");
    }

    /// RFC 7541 C.5: responses in a table of 256 bytes evict their oldest entries.
    #[test]
    fn the_rfc_response_examples_evict_in_a_small_table() {
        let mut d = Decoder::new(256);
        let first = hex(
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
             2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
             6c65 2e63 6f6d",
        );
        decode(&mut d, &first).unwrap();
        assert_eq!(d.size, 222);
        let second = decode(&mut d, &hex("4803 3330 37c1 c0bf")).unwrap();
        assert_eq!(second[0], (":status".to_owned(), "307".to_owned()));
        assert_eq!(second[3].1, "https://www.example.com");
        assert_eq!(d.size, 222);
        assert_eq!(d.table.len(), 4);
    }

    /// A size update within the announced limit shrinks the table; past it, after a field,
    /// an index past the tables, and truncated integers and strings are each refused.
    #[test]
    fn malformed_blocks_are_refused() {
        let mut d = Decoder::new(4096);
        decode(&mut d, &hex("418c f1e3 c2e5 f23a 6ba0 ab90 f4ff")).unwrap();
        assert_eq!(d.table.len(), 1);
        decode(&mut d, &hex("20 82")).unwrap();
        assert_eq!((d.table.len(), d.size, d.max_size), (0, 0, 0));
        for (block, why) in [
            ("3fe2 1f", "over the 4096 announced"),
            ("82 20", "after a header field"),
            ("be", "index 62, past the 61"),
            ("80", "index 0"),
            ("ff", "ends inside an integer"),
            ("ff ff ff ff ff 0f", "too large"),
            ("0f 00 85 61", "runs past"),
            ("00", "ends before a string"),
        ] {
            let e = decode(&mut Decoder::new(4096), &hex(block)).unwrap_err();
            assert!(e.contains(why), "{block}: {e}");
        }
    }

    /// What the encoder writes, the decoder reads back: statuses in and out of the static
    /// table, names in and out of it, and values long enough for a multi-byte length.
    #[test]
    fn encoded_fields_decode_to_themselves() {
        let long = "x".repeat(300);
        let mut out = Vec::new();
        put_status(&mut out, 200);
        put_status(&mut out, 503);
        put_field(&mut out, b"content-type", b"application/grpc");
        put_field(&mut out, b"grpc-status", b"0");
        put_field(&mut out, b"grpc-message", long.as_bytes());
        let mut d = Decoder::new(4096);
        let fields = decode(&mut d, &Bytes::from(out)).unwrap();
        assert_eq!(
            fields,
            pairs(&[
                (":status", "200"),
                (":status", "503"),
                ("content-type", "application/grpc"),
                ("grpc-status", "0"),
                ("grpc-message", &long),
            ])
        );
        assert!(d.table.is_empty(), "nothing the encoder writes is indexed");
    }

    /// The encoder looks for whole fields only in the static table's first entries: past
    /// them the table holds names alone.
    #[test]
    fn the_static_table_has_values_only_in_its_first_entries() {
        assert!(STATIC[..STATIC_WITH_VALUES]
            .last()
            .is_some_and(|(_, v)| !v.is_empty()));
        assert!(STATIC[STATIC_WITH_VALUES..]
            .iter()
            .all(|(_, v)| v.is_empty()));
    }

    /// One request's fields through the encoder: the repeated ones, the static table's
    /// whole fields, and a changing one.
    fn request(e: &mut Encoder, path: &str, timeout: &str) -> Bytes {
        let mut out = Vec::new();
        e.begin(&mut out);
        e.field(&mut out, b":method", b"POST", true);
        e.field(&mut out, b":scheme", b"http", true);
        e.field(&mut out, b":path", path.as_bytes(), true);
        e.field(&mut out, b":authority", b"db-1.example:16020", true);
        e.field(&mut out, b"content-type", b"application/grpc", true);
        e.field(&mut out, b"te", b"trailers", true);
        e.field(&mut out, b"grpc-timeout", timeout.as_bytes(), false);
        Bytes::from(out)
    }

    fn request_pairs(path: &str, timeout: &str) -> Vec<(String, String)> {
        pairs(&[
            (":method", "POST"),
            (":scheme", "http"),
            (":path", path),
            (":authority", "db-1.example:16020"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-timeout", timeout),
        ])
    }

    /// Requests encoded on one connection decode to their fields through one decoder, the
    /// way a server reads them; once their repeated fields are in the table, a request's
    /// head is one byte a repeated field, and the table the decoder holds is the one the
    /// encoder counted.
    #[test]
    fn requests_decode_to_their_fields_and_repeats_take_one_byte() {
        let mut e = Encoder::default();
        let mut d = Decoder::new(4096);
        let first = request(&mut e, "/basalt.v1.Table/Get", "30000m");
        assert_eq!(
            decode(&mut d, &first).unwrap(),
            request_pairs("/basalt.v1.Table/Get", "30000m")
        );
        let second = request(&mut e, "/basalt.v1.Table/Mutate", "29999m");
        assert_eq!(
            decode(&mut d, &second).unwrap(),
            request_pairs("/basalt.v1.Table/Mutate", "29999m")
        );
        let third = request(&mut e, "/basalt.v1.Table/Get", "5S");
        assert_eq!(
            decode(&mut d, &third).unwrap(),
            request_pairs("/basalt.v1.Table/Get", "5S")
        );
        // Six one-byte fields, and the deadline's literal: name index, length, "5S".
        let deadline_literal = 1 + 1 + "grpc-timeout".len() + 1 + 2;
        assert_eq!(third.len(), 6 + deadline_literal);
        assert_eq!(d.size, e.size);
        assert_eq!(d.table.len(), e.added.len());
        assert_eq!(
            d.table[0],
            *e.added.last().unwrap(),
            "newest first in the decoder"
        );
    }

    /// A table with no room for a field leaves it a literal, and a peer that shrinks its
    /// table gets the size update first in the next block, with the same entries evicted
    /// on both sides.
    #[test]
    fn a_full_or_shrunk_table_keeps_both_sides_in_step() {
        let mut e = Encoder::default();
        let mut d = Decoder::new(4096);
        for n in 0..100 {
            let path = format!("/basalt.v1.Table/Method{n:03}");
            let block = request(&mut e, &path, "1S");
            assert_eq!(decode(&mut d, &block).unwrap(), request_pairs(&path, "1S"));
            assert!(e.size <= 4096 && e.size == d.size);
        }
        e.set_max_size(200);
        let block = request(&mut e, "/basalt.v1.Table/Get", "1S");
        assert_eq!(block[0] & 0xe0, 0x20, "the block starts with a size update");
        assert_eq!(
            decode(&mut d, &block).unwrap(),
            request_pairs("/basalt.v1.Table/Get", "1S")
        );
        assert_eq!((d.size, d.table.len()), (e.size, e.added.len()));
        assert!(d.size <= 200);
        let again = request(&mut e, "/basalt.v1.Table/Get", "1S");
        assert_ne!(again[0] & 0xe0, 0x20, "the update is written once");
        assert_eq!(
            decode(&mut d, &again).unwrap(),
            request_pairs("/basalt.v1.Table/Get", "1S")
        );
    }
}
