//! Data block layouts of earlier format versions, still read (docs/formats/storefile.md):
//! each entry is handed on as its encoded key, TTL and value, for the block to be rewritten
//! into today's layout.

use crate::codec::Reader;
use crate::storefile::keys::Damage;

/// What receives each entry: its encoded key, TTL and value.
pub type Sink<'s> = dyn FnMut(&[u8], Option<u64>, &[u8]) -> Result<(), Damage> + 's;

/// The entries of a version 1 body: keys prefix-compressed, restart points every 16 entries.
pub fn v1_entries(body: &[u8], add: &mut Sink<'_>) -> Result<(), Damage> {
    let n_restarts = u32_at(body, body.len().checked_sub(4))
        .ok_or("block shorter than its restart count")? as usize;
    let entries_end = n_restarts
        .checked_mul(4)
        .and_then(|r| body.len().checked_sub(4 + r))
        .ok_or("restart array larger than the block")?;
    let mut r = Reader::new(&body[..entries_end]);
    let mut key = Vec::new();
    while !r.is_empty() {
        let shared = r.len().ok_or("truncated entry header")?;
        let unshared = r.len().ok_or("truncated entry header")?;
        let value_len = r.len().ok_or("truncated entry header")?;
        let ttl = ttl(&mut r)?;
        if shared > key.len() {
            return Err("shared key prefix longer than the previous key");
        }
        key.truncate(shared);
        key.extend_from_slice(r.take(unshared).ok_or("truncated key")?);
        let value = r.take(value_len).ok_or("truncated value")?;
        add(&key, ttl, value)?;
    }
    Ok(())
}

/// The entries of a version 2 body: whole keys, every entry's offset (`u32`), the count.
pub fn v2_entries(body: &[u8], add: &mut Sink<'_>) -> Result<(), Damage> {
    let count_at = body.len().checked_sub(4);
    let count = u32_at(body, count_at).ok_or("block shorter than its entry count")? as usize;
    let offsets_at = count
        .checked_mul(4)
        .and_then(|o| count_at?.checked_sub(o))
        .ok_or("offset array larger than the block")?;
    let mut r = Reader::new(&body[..offsets_at]);
    for i in 0..count {
        if u32_at(body, Some(offsets_at + 4 * i)).map(|o| o as usize) != Some(r.position()) {
            return Err("entry offset out of place");
        }
        let key_len = r.len().ok_or("malformed entry header")?;
        let value_len = r.len().ok_or("malformed entry header")?;
        let ttl = ttl(&mut r).map_err(|_| "malformed entry header")?;
        let key = r.take(key_len).ok_or("malformed entry header")?;
        let value = r.take(value_len).ok_or("malformed entry header")?;
        add(key, ttl, value)?;
    }
    if !r.is_empty() {
        return Err("bytes between the last entry and the offset array");
    }
    Ok(())
}

/// An entry's flags and the TTL they announce.
fn ttl(r: &mut Reader<'_>) -> Result<Option<u64>, Damage> {
    match r.u8().ok_or("truncated entry flags")? {
        0 => Ok(None),
        1 => Ok(Some(r.varint().ok_or("truncated ttl")?)),
        _ => Err("unknown entry flags"),
    }
}

/// The little-endian `u32` at `at` in `body`.
fn u32_at(body: &[u8], at: Option<usize>) -> Option<u32> {
    let at = at?;
    let w = body.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(w.try_into().ok()?))
}
