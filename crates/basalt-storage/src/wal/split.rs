//! Splitting a dead region server's log into each region's recovered edits (HBase's
//! `WALSplitter`), and reading them back when the region opens again elsewhere.
//!
//! The master splits the log once it has fenced it (`Env::fence_logs`), segment by segment:
//! each segment's edits go, grouped by region, to
//! `<region dir>/recovered.edits/<server>-<segment file>` in the segment's format
//! (`docs/formats/wal.md`). The region's next server replays them before it serves the
//! region, flushes, and deletes them.
//!
//! # Invariants
//! 1. A split is idempotent: a file is named after its source segment, its content depends
//!    on that segment alone, and a file an earlier attempt left is kept only if it decodes
//!    whole (a torn one is written again; one that cannot be read fails the attempt). So a
//!    split that stopped part-way is simply run again. A split whose clearing of the log
//!    stopped part-way runs again over what is left: every file it wrote is whole and kept,
//!    and it writes only files that a replay has consumed since, whose edits the region has
//!    flushed (so the replay skips them).
//! 2. The split reads and never changes the dead server's log: a torn tail ends a segment
//!    (it was never acknowledged) without being cut away.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use basalt_model::{Error, Result};

use super::record::{encode_record, header, WalEdit, HEADER_LEN};
use super::replay::{decode_segment, holds_a_record_after};
use crate::env::Env;

/// The directory in a region's directory that holds its recovered edits.
pub const RECOVERED_EDITS: &str = "recovered.edits";

/// The edits of one segment of a dead server's log, by region id; `None` when the segment
/// is gone (its server retired it after every region flushed past it, which a zombie may do
/// while the master splits).
///
/// # Errors
/// `Corruption` for damage other than a torn tail; `Io`.
pub fn read_segment(env: &Env, path: &Path) -> Result<Option<BTreeMap<u64, Vec<WalEdit>>>> {
    let data = match env.read_all(path) {
        Ok(d) => d,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let mut by_region: BTreeMap<u64, Vec<WalEdit>> = BTreeMap::new();
    if data.len() < HEADER_LEN {
        // Created, and its header never (or only partly) stored: no record.
        return Ok(Some(by_region));
    }
    let decoded = decode_segment(&data, path, &mut |e: WalEdit| {
        by_region.entry(e.region_id).or_default().push(e);
        Ok(())
    })?;
    if let Some(stop) = decoded.stop {
        if !stop.torn && holds_a_record_after(&data, stop.pos) {
            return Err(Error::corruption(
                "WAL record",
                path,
                format!(
                    "{} at offset {}, with records after it; the split stops here, nothing was changed",
                    stop.why, stop.pos
                ),
            ));
        }
    }
    Ok(Some(by_region))
}

/// The recovered-edits file of `region_dir` for segment `segment` of `server`'s log.
#[must_use]
pub fn recovered_edits_path(region_dir: &Path, server: &str, segment: &Path) -> PathBuf {
    let file = segment
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    region_dir
        .join(RECOVERED_EDITS)
        .join(format!("{server}-{file}"))
}

/// Writes `edits` to `path` (invariant 1): a whole file already there is kept. Returns
/// whether it wrote the file.
///
/// # Errors
/// `Io`.
pub fn write_recovered_edits(env: &Env, path: &Path, edits: &[WalEdit]) -> Result<bool> {
    if env.exists(path)? {
        match decode_whole(env, path) {
            Ok(_) => return Ok(false),
            // A file an earlier attempt never completed: written again.
            Err(Error::Corruption { .. }) => env.remove_file(path)?,
            // Not known to be torn: the file stays. A later attempt reads a log that an
            // interrupted clear may have cut short, so it must not replace a whole file.
            Err(e) => return Err(e),
        }
    }
    let mut data = header();
    for e in edits {
        encode_record(&mut data, e.region_id, e.seq_id, &e.cells);
    }
    if let Some(dir) = path.parent() {
        env.create_dir_all(dir)?;
    }
    let mut f = env.create(path)?;
    f.write_all(&data)?;
    f.sync_data()?;
    if let Some(dir) = path.parent() {
        env.sync_dir(dir)?;
    }
    Ok(true)
}

/// The recovered-edits files of the region in `region_dir`, in name order.
///
/// # Errors
/// `Io` listing the directory.
pub fn recovered_edits(env: &Env, region_dir: &Path) -> Result<Vec<PathBuf>> {
    let dir = region_dir.join(RECOVERED_EDITS);
    if !env.exists(&dir)? {
        return Ok(Vec::new());
    }
    Ok(env.list(&dir)?.into_iter().map(|n| dir.join(n)).collect())
}

/// Every edit of a recovered-edits file, which must be whole.
///
/// # Errors
/// `Corruption` for any damage (the file was stored whole, so damage is not a torn tail);
/// `Io`.
pub fn decode_whole(env: &Env, path: &Path) -> Result<Vec<WalEdit>> {
    let data = env.read_all(path)?;
    let mut edits = Vec::new();
    let decoded = decode_segment(&data, path, &mut |e| {
        edits.push(e);
        Ok(())
    })?;
    match decoded.stop {
        None => Ok(edits),
        Some(stop) => Err(Error::corruption(
            "recovered edits",
            path,
            format!("{} at offset {}", stop.why, stop.pos),
        )),
    }
}
