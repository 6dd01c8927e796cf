//! Reading WAL segments back on open (docs/formats/wal.md, "Recovery").

use std::path::{Path, PathBuf};

use basalt_model::{Error, Result};

use super::record::{
    decode_edit, WalEdit, HEADER_LEN, MAGIC, MAX_PAYLOAD_LEN, RECORD_HEADER_LEN, VERSION,
};
use crate::env::Env;

/// A segment found on disk, with what recovery learnt about it.
#[derive(Clone, Debug)]
pub struct SegmentInfo {
    pub path: PathBuf,
    /// Highest sequence id of any edit in the segment (0 when empty).
    pub max_seq_id: u64,
}

/// The file name of segment `id`.
#[must_use]
pub fn segment_name(id: u64) -> String {
    format!("{id:020}.wal")
}

/// Segment ids found in `dir`, ascending.
///
/// # Errors
/// `Io` when the directory cannot be listed.
pub fn list_segments(env: &Env, dir: &Path) -> Result<Vec<u64>> {
    let mut ids: Vec<u64> = env
        .list(dir)?
        .iter()
        .filter_map(|n| n.strip_suffix(".wal").and_then(|s| s.parse().ok()))
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// Reads the given segments in order, calling `apply` for each edit. A torn tail of the last
/// one is truncated away; any other damage is an error.
///
/// # Errors
/// `Corruption` naming the segment and offset; `Io`; or whatever `apply` returns.
pub fn replay_paths(
    env: &Env,
    paths: &[PathBuf],
    mut apply: impl FnMut(WalEdit) -> Result<()>,
) -> Result<Vec<SegmentInfo>> {
    let mut infos = Vec::with_capacity(paths.len());
    let last = last_with_records(env, paths)?;
    for (i, path) in paths.iter().enumerate() {
        let is_last = i >= last;
        let max_seq_id = replay_segment(env, path, is_last, &mut apply)?;
        infos.push(SegmentInfo {
            path: path.clone(),
            max_seq_id,
        });
    }
    Ok(infos)
}

/// The index of the last of a log's segments (in id order) that holds any byte but zeros
/// after its header; 0 when none does. A crash can leave segments that hold no record after
/// the one it tore (a header, and the zeros a segment is made with): the torn one is still
/// the log's last, where a torn tail may be.
///
/// # Errors
/// `Io` reading a segment.
pub fn last_with_records(env: &Env, paths: &[PathBuf]) -> Result<usize> {
    for (i, p) in paths.iter().enumerate().rev() {
        let data = env.read_all(p)?;
        if data.get(HEADER_LEN..).is_some_and(|rest| !unwritten(rest)) {
            return Ok(i);
        }
    }
    Ok(0)
}

/// Whether `rest` (a segment's bytes from where its records stop) is all zeros: room the
/// segment was made with and never written (wal's invariant 6), not damage, in any segment.
/// Those before the last were synced whole before the next was begun.
#[must_use]
pub fn unwritten(rest: &[u8]) -> bool {
    rest.iter().all(|&b| b == 0)
}

fn replay_segment(
    env: &Env,
    path: &Path,
    is_last: bool,
    apply: &mut impl FnMut(WalEdit) -> Result<()>,
) -> Result<u64> {
    let data = env.read_all(path)?;
    if data.len() < HEADER_LEN {
        // A crash right after creating the segment leaves it short; only the last may be.
        if is_last && MAGIC.starts_with(&data[..data.len().min(MAGIC.len())]) {
            env.truncate(path, 0)?;
            return Ok(0);
        }
        return Err(Error::corruption(
            "WAL segment header",
            path,
            "segment is shorter than its header",
        ));
    }
    let decoded = decode_segment(&data, path, apply)?;
    match decoded.stop {
        None => {}
        Some(Stop { pos, why, torn }) => {
            let damaged_tail = !torn && !holds_a_record_after(&data, pos);
            if !(unwritten(&data[pos..]) || is_last && (torn || damaged_tail)) {
                return Err(Error::corruption(
                    "WAL record",
                    path,
                    format!(
                        "{why} at offset {pos}, with records after it; nothing was changed. `basalt hbck --fix-wal` cuts the segment there and keeps the bytes it cuts"
                    ),
                ));
            }
            if damaged_tail {
                set_aside(env, path, &data, pos, why)?;
            }
            env.truncate(path, pos as u64)?;
        }
    }
    Ok(decoded.max_seq_id)
}

/// Whether a whole record (length and payload checksums both right) starts anywhere after
/// `pos`: if so, damage at `pos` is in the middle of the log, not at its end.
pub(crate) fn holds_a_record_after(data: &[u8], pos: usize) -> bool {
    // A record's header is never all zeros (the checksum of a zero length is not zero), so
    // none starts past the last byte that is not: the zeros a segment is made with are not
    // searched, each start at the cost of the rest of them.
    let end = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    (pos + 1..end).any(|p| matches!(next_record(data, p), Step::Record { .. }))
}

/// Copies `data[pos..]` (a damaged end of the log) to `<segment>.damaged-<pos>` beside the
/// segment, synced, before the segment is cut there: the bytes are kept for an operator.
///
/// # Errors
/// `Io`.
pub fn set_aside(env: &Env, path: &Path, data: &[u8], pos: usize, why: &str) -> Result<PathBuf> {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(format!(".damaged-{pos}"));
    let kept = path.with_file_name(name);
    env.remove_file(&kept)?; // a copy left by an earlier attempt that crashed
    let mut f = env.create(&kept)?;
    f.write_all(&data[pos..])?;
    f.sync_data()?;
    if let Some(dir) = path.parent() {
        env.sync_dir(dir)?;
    }
    tracing::warn!(
        segment = %path.display(),
        offset = pos,
        bytes = data.len() - pos,
        kept = %kept.display(),
        "the end of the WAL is damaged ({why}) with no record after it: recovery stops at the last good record (point-in-time recovery); the damaged bytes are kept"
    );
    Ok(kept)
}

/// What a segment's bytes hold: the highest sequence id read, and where reading stopped
/// before the end, if it did.
#[derive(Debug, PartialEq, Eq)]
pub struct DecodedSegment {
    pub max_seq_id: u64,
    pub stop: Option<Stop>,
}

/// Where and why reading a segment stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stop {
    pub pos: usize,
    pub why: &'static str,
    /// Damage a crash during the last write explains (a torn tail); otherwise the bytes are
    /// damaged (bit rot, junk).
    pub torn: bool,
}

/// Decodes a whole segment (header and records), calling `apply` for each edit up to where
/// its records end or stop making sense. Never panics, whatever the bytes.
///
/// # Errors
/// `Corruption` for a bad header or a record whose checksums hold but whose edit does not
/// decode; whatever `apply` returns.
pub fn decode_segment(
    data: &[u8],
    path: &Path,
    apply: &mut impl FnMut(WalEdit) -> Result<()>,
) -> Result<DecodedSegment> {
    if data.len() < HEADER_LEN || &data[..8] != MAGIC || data[8..12] != VERSION.to_le_bytes() {
        return Err(Error::corruption(
            "WAL segment header",
            path,
            "bad magic or unsupported version",
        ));
    }
    let mut pos = HEADER_LEN;
    let mut max_seq_id = 0;
    while pos < data.len() {
        match next_record(data, pos) {
            Step::Record { payload, end } => {
                let edit = decode_edit(payload, path, pos as u64)?;
                max_seq_id = max_seq_id.max(edit.seq_id);
                apply(edit)?;
                pos = end;
            }
            Step::Torn(why) => {
                let stop = Stop {
                    pos,
                    why,
                    torn: true,
                };
                return Ok(DecodedSegment {
                    max_seq_id,
                    stop: Some(stop),
                });
            }
            Step::Corrupt(why) => {
                let stop = Stop {
                    pos,
                    why,
                    torn: false,
                };
                return Ok(DecodedSegment {
                    max_seq_id,
                    stop: Some(stop),
                });
            }
        }
    }
    Ok(DecodedSegment {
        max_seq_id,
        stop: None,
    })
}

enum Step<'a> {
    Record {
        payload: &'a [u8],
        end: usize,
    },
    /// Damage that a crash during the last write explains.
    Torn(&'static str),
    /// Damage a crash cannot explain.
    Corrupt(&'static str),
}

fn next_record(data: &[u8], pos: usize) -> Step<'_> {
    let rest = &data[pos..];
    if unwritten(rest) {
        return Step::Torn("zero-filled tail");
    }
    if rest.len() < RECORD_HEADER_LEN {
        return Step::Torn("truncated record header");
    }
    let word = |i: usize| u32::from_le_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]);
    if crate::checksum::crc32c(&rest[..4]) != word(4) {
        // A torn write leaves a prefix of the record and zeros, never a wrong length with
        // more data after it: that is damage in the middle of the log.
        return if rest[8..].iter().all(|&b| b == 0) {
            Step::Torn("torn record header")
        } else {
            Step::Corrupt("record length checksum mismatch")
        };
    }
    let len = word(0) as usize;
    if len > MAX_PAYLOAD_LEN {
        return Step::Corrupt("impossible record length");
    }
    // The length is trustworthy now: running past the end can only be a torn last write.
    let end = pos + RECORD_HEADER_LEN + len;
    if end > data.len() {
        return Step::Torn("record runs past the end of the segment");
    }
    let payload = &data[pos + RECORD_HEADER_LEN..end];
    if crate::checksum::crc32c(payload) != word(8) {
        let after = &data[end..];
        return if after.iter().all(|&b| b == 0) {
            Step::Torn("checksum mismatch in the last record")
        } else {
            Step::Corrupt("checksum mismatch")
        };
    }
    Step::Record { payload, end }
}
