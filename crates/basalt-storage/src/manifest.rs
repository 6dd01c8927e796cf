//! Versioned metadata files: the region manifest and the catalog are committed by writing a
//! new file with a higher number, never by renaming or rewriting (docs/formats/manifest.md).
//!
//! # Format
//! `<prefix>-<20-digit version>`: a JSON document, then its CRC-32C as 8 hex digits and the
//! line `BASALT-END`. A reader takes the highest complete version; older versions are deleted
//! only after a newer one is durable.
//!
//! # Invariants
//! 1. A version without its end marker is a torn commit (a crash before its sync finished):
//!    it was never acknowledged, so the reader falls back to the version before it.
//! 2. A version with its end marker whose checksum or content is wrong is damage, not a torn
//!    commit: loading fails with `Corruption` naming the file, rather than silently rolling
//!    the metadata back to an older version.

use std::path::{Path, PathBuf};

use basalt_model::{Error, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::env::Env;

const END: &str = "\nBASALT-END\n";

/// A directory of numbered versions of one document.
#[derive(Debug)]
pub struct VersionedFile {
    dir: PathBuf,
    prefix: &'static str,
    version: u64,
}

impl VersionedFile {
    /// Loads the newest complete version in `dir`, if any.
    ///
    /// # Errors
    /// `Corruption` when versions exist but none is complete, or the newest complete one is
    /// damaged; `Io`.
    pub fn load<T: DeserializeOwned>(
        env: &Env,
        dir: &Path,
        prefix: &'static str,
    ) -> Result<(VersionedFile, Option<T>)> {
        env.create_dir_all(dir)?;
        let mut versions: Vec<u64> = env
            .list(dir)?
            .iter()
            .filter_map(|n| n.strip_prefix(prefix)?.strip_prefix('-')?.parse().ok())
            .collect();
        versions.sort_unstable();
        let mut last_err = None;
        for &v in versions.iter().rev() {
            let path = dir.join(name(prefix, v));
            let data = env.read_all(&path)?;
            if !data.ends_with(END.as_bytes()) {
                // A torn newest version (crash while committing) falls back to the previous
                // (invariant 1).
                last_err = Some(Error::corruption(
                    "metadata file",
                    &path,
                    "missing end marker".to_owned(),
                ));
                continue;
            }
            let doc = decode(&data, &path)?; // invariant 2
            let vf = VersionedFile {
                dir: dir.to_owned(),
                prefix,
                version: v,
            };
            return Ok((vf, Some(doc)));
        }
        if let Some(e) = last_err {
            return Err(e);
        }
        Ok((
            VersionedFile {
                dir: dir.to_owned(),
                prefix,
                version: 0,
            },
            None,
        ))
    }

    /// Commits `doc` as the next version: written, synced, directory synced, then older
    /// versions removed. An error means the new version is not durable, and the caller must
    /// keep using its previous document (see `Region::edit_manifest`).
    ///
    /// # Errors
    /// `Io`.
    pub fn commit<T: Serialize>(&mut self, env: &Env, doc: &T) -> Result<()> {
        let json = serde_json::to_vec_pretty(doc)
            .map_err(|e| Error::io("encoding metadata", std::io::Error::other(e)))?;
        let mut data = json;
        let crc = crc32c::crc32c(&data);
        data.extend_from_slice(format!("\n{crc:08x}{END}").as_bytes());
        let next = self.version + 1;
        let path = self.dir.join(name(self.prefix, next));
        env.remove_file(&path)?; // a leftover of a crashed commit of this same number
        let mut f = env.create(&path)?;
        f.write_all(&data)?;
        f.sync_data()?;
        env.sync_dir(&self.dir)?;
        // Durable: the commit has happened, whatever follows. Old versions are garbage now;
        // one that cannot be removed is left for a later commit (readers take the newest).
        let previous = self.version;
        self.version = next;
        for old in (previous.saturating_sub(2)..=previous).filter(|v| *v > 0) {
            if let Err(e) = env.remove_file(&self.dir.join(name(self.prefix, old))) {
                tracing::warn!(error = %e, "leaving an old metadata version behind");
            }
        }
        Ok(())
    }
}

fn name(prefix: &str, v: u64) -> String {
    format!("{prefix}-{v:020}")
}

fn decode<T: DeserializeOwned>(data: &[u8], path: &Path) -> Result<T> {
    let bad = |d: &str| Error::corruption("metadata file", path, d.to_owned());
    let body = data
        .strip_suffix(END.as_bytes())
        .ok_or_else(|| bad("missing end marker"))?;
    if body.len() < 9 || body[body.len() - 9] != b'\n' {
        return Err(bad("missing checksum"));
    }
    let (json, crc_hex) = body.split_at(body.len() - 9);
    let crc = std::str::from_utf8(&crc_hex[1..])
        .ok()
        .and_then(|s| u32::from_str_radix(s, 16).ok())
        .ok_or_else(|| bad("bad checksum field"))?;
    if crc32c::crc32c(json) != crc {
        return Err(bad("checksum mismatch"));
    }
    serde_json::from_slice(json).map_err(|e| bad(&format!("undecodable: {e}")))
}
