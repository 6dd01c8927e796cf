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
//! 3. A commit creates the next version if absent and never deletes or overwrites a version
//!    at or above it: the next number is one above the highest present (torn ones
//!    included), and a create that finds the file there means another writer committed it
//!    since this one loaded. The commit then fails (`DoNotRetry`, "fenced") and the newer
//!    version stands. On shared storage this is the ownership fence: a stale owner cannot
//!    destroy its successor's commit. Since old versions are cleaned away, the version a
//!    stale owner takes may be free again: so on shared storage a commit lists the
//!    versions after its create, and a higher one there means it is fenced just the same
//!    (the higher one was made before the cleaning that freed this one).
//! 4. On shared storage, a create that answers an error may still have taken effect (the
//!    store carried out the request and the answer was lost). A commit whose create fails
//!    reads the version back: holding exactly the bytes it wrote, it is this writer's
//!    commit, and the commit succeeds. When even that read fails, the commit fails and
//!    stays in doubt: the writer's next commit first reads that version again. Holding this
//!    writer's bytes, it was this writer's commit, which the next one supersedes (the
//!    writer's document never took the failed change in, so the change is undone, as its
//!    error said); absent, it never happened; holding other bytes, another writer's, and
//!    this one is fenced. Unreadable again, the next commit fails too, and nothing is
//!    written. On a local file system the version is this writer's whatever it holds (the
//!    directory has one writer), torn or whole.

use std::path::{Path, PathBuf};

use basalt_model::{Error, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::env::Env;

const END: &str = "\nBASALT-END\n";

/// Whether a create that answered an error took effect with exactly `data` (invariant 4):
/// on shared storage a request whose answer was lost may have been carried out, and a
/// version holding these bytes is this writer's commit. On a local file system an error
/// from the sync means the bytes may not be durable, whatever a read shows.
fn committed_anyway(env: &Env, path: &Path, data: &[u8]) -> bool {
    env.is_shared() && env.read_all(path).is_ok_and(|found| found == data)
}

/// A directory of numbered versions of one document.
#[derive(Debug)]
pub struct VersionedFile {
    dir: PathBuf,
    prefix: &'static str,
    version: u64,
    /// The bytes of a failed commit that may have created version `version + 1`
    /// (invariant 4).
    in_doubt: Option<Vec<u8>>,
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
        let versions = versions(env, dir, prefix)?;
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
                                             // The next commit goes above every version present, torn ones included
                                             // (invariant 3).
            let highest = versions.last().copied().unwrap_or(v);
            let vf = VersionedFile {
                dir: dir.to_owned(),
                prefix,
                version: highest,
                in_doubt: None,
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
                in_doubt: None,
            },
            None,
        ))
    }

    /// The version last loaded or committed (0 before the first).
    #[must_use]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Commits `doc` as the next version, created only if absent (invariant 3): written,
    /// synced, directory synced, then older versions removed. An error means the new version
    /// is not durable, and the caller must keep using its previous document (see
    /// `Region::edit_manifest`).
    ///
    /// # Errors
    /// `DoNotRetry` when another writer committed that version first (this writer is
    /// fenced); `Io`.
    pub fn commit<T: Serialize>(&mut self, env: &Env, doc: &T) -> Result<()> {
        let json = serde_json::to_vec_pretty(doc)
            .map_err(|e| Error::io("encoding metadata", std::io::Error::other(e)))?;
        let mut data = json;
        let crc = crate::checksum::crc32c(&data);
        data.extend_from_slice(format!("\n{crc:08x}{END}").as_bytes());
        self.settle_in_doubt(env)?;
        let next = self.version + 1;
        let path = self.dir.join(name(self.prefix, next));
        // A local file is created exclusively at `create`; an object on shared storage at
        // its sync. Either way, finding the version taken means this writer is fenced.
        let taken = |e: Error| match e {
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists => {
                fenced(&path)
            }
            e => e,
        };
        let created = env.create(&path).and_then(|mut f| {
            f.write_all(&data)?;
            f.sync_data()
        });
        let committed = match created {
            Err(e) if !committed_anyway(env, &path, &data) => Err(taken(e)),
            _ => self.confirm(env, &path, next),
        };
        if let Err(e) = committed {
            if !is_fenced(&e) {
                self.in_doubt = Some(data);
            }
            return Err(e);
        }
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

    /// Makes the version just created at `path` durable, unless a higher one was there
    /// before it: then the version this writer took had been cleaned away after a newer
    /// writer's commit, and it is fenced (invariant 3).
    fn confirm(&self, env: &Env, path: &Path, next: u64) -> Result<()> {
        if env.is_shared() && versions(env, &self.dir, self.prefix)?.last() > Some(&next) {
            if let Err(e) = env.remove_file(path) {
                tracing::warn!(error = %e, "leaving a superseded metadata version behind");
            }
            return Err(fenced(path));
        }
        env.sync_dir(&self.dir)
    }

    /// Learns whether the last failed commit took effect (invariant 4): if so, the next
    /// commit goes above it.
    ///
    /// # Errors
    /// `DoNotRetry` (fenced) when another writer holds the version; `Io` when it cannot be
    /// read (still in doubt).
    fn settle_in_doubt(&mut self, env: &Env) -> Result<()> {
        let Some(data) = self.in_doubt.take() else {
            return Ok(());
        };
        let version = self.version + 1;
        let path = self.dir.join(name(self.prefix, version));
        match env.read_all(&path) {
            Ok(found) if found == data || !env.is_shared() => self.version = version,
            Ok(_) => return Err(fenced(&path)),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                self.in_doubt = Some(data);
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Whether a commit failed because another writer holds the version it meant to create
/// (invariant 3): the one error that says for certain the commit did not happen. Any other
/// error may come from a commit that took effect (invariant 4), so what it names must stay.
#[must_use]
pub fn is_fenced(e: &Error) -> bool {
    matches!(e, Error::DoNotRetry(m) if m.starts_with(FENCED))
}

const FENCED: &str = "fenced: ";

/// Another writer committed the version this one meant to create.
fn fenced(path: &Path) -> Error {
    Error::DoNotRetry(format!(
        "{FENCED}{} was committed by another writer since this one loaded its metadata; nothing was changed",
        path.display()
    ))
}

/// The versions in `dir`, in order (torn ones included).
fn versions(env: &Env, dir: &Path, prefix: &str) -> Result<Vec<u64>> {
    let mut versions: Vec<u64> = env
        .list(dir)?
        .iter()
        .filter_map(|n| n.strip_prefix(prefix)?.strip_prefix('-')?.parse().ok())
        .collect();
    versions.sort_unstable();
    Ok(versions)
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
    if crate::checksum::crc32c(json) != crc {
        return Err(bad("checksum mismatch"));
    }
    serde_json::from_slice(json).map_err(|e| bad(&format!("undecodable: {e}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test
    #![allow(clippy::disallowed_methods)] // tests damage files beneath the `Env`

    use super::*;

    type Doc = Vec<u32>;

    fn load(env: &Env, dir: &Path) -> (VersionedFile, Option<Doc>) {
        VersionedFile::load(env, dir, "DOC").unwrap()
    }

    #[test]
    fn a_stale_writer_is_fenced_and_the_newer_version_stands() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::default();
        let (mut first, _) = load(&env, dir.path());
        first.commit(&env, &vec![1]).unwrap();
        // Two writers load version 1; the new owner commits 2, the stale one then tries.
        let (mut stale, _) = load(&env, dir.path());
        let (mut owner, _) = load(&env, dir.path());
        owner.commit(&env, &vec![2]).unwrap();
        let e = stale.commit(&env, &vec![666]).unwrap_err();
        assert!(
            matches!(e, Error::DoNotRetry(ref m) if m.contains("fenced")),
            "{e}"
        );
        assert_eq!(load(&env, dir.path()).1, Some(vec![2]));
        // The owner goes on committing above it.
        owner.commit(&env, &vec![3]).unwrap();
        assert_eq!(load(&env, dir.path()).1, Some(vec![3]));
    }

    #[test]
    fn a_local_commit_whose_sync_failed_is_gone_above_by_the_next() {
        use crate::env::{FaultInjector, Op, SystemClock};
        let dir = tempfile::tempdir().unwrap();
        let faults = std::sync::Arc::new(FaultInjector::new(0));
        let env = Env::with_faults(std::sync::Arc::new(SystemClock), faults.clone());
        let (mut vf, _) = load(&env, dir.path());
        vf.commit(&env, &vec![1]).unwrap();
        // Version 2 is created and written, and its sync fails: the file stays.
        faults.fail_nth(Op::Sync, 1);
        let e = vf.commit(&env, &vec![2]).unwrap_err();
        assert!(!is_fenced(&e), "{e}");
        assert!(dir.path().join(name("DOC", 2)).exists());
        // The next commit takes it for this writer's own and goes above it.
        vf.commit(&env, &vec![3]).unwrap();
        assert_eq!(vf.version(), 3);
        assert_eq!(load(&env, dir.path()).1, Some(vec![3]));
    }

    #[test]
    fn a_commit_after_a_torn_version_goes_above_it() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::default();
        let (mut vf, _) = load(&env, dir.path());
        vf.commit(&env, &vec![1]).unwrap();
        let torn = dir.path().join(name("DOC", 2));
        std::fs::write(&torn, b"[2").unwrap();
        let (mut vf, doc) = load(&env, dir.path());
        assert_eq!(
            doc,
            Some(vec![1]),
            "a torn version falls back to the one before"
        );
        vf.commit(&env, &vec![3]).unwrap();
        assert!(dir.path().join(name("DOC", 3)).exists());
        assert_eq!(load(&env, dir.path()).1, Some(vec![3]));
    }
}
