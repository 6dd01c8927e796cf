//! `basalt hbck`: checks a data directory offline and repairs what it is told to (in the
//! spirit of HBase's hbck2). It holds the directory's lock, so no server or shell has it open.
//!
//! It reports: a missing or damaged catalog; tables and regions without directories; regions
//! whose manifest is missing or damaged; store files that are missing or do not open;
//! directories the catalog does not know (the next open archives them); WAL segments with
//! damage the next open would refuse, and damaged WAL tails already set aside; what the
//! archive and the sideline hold.
//!
//! Repairs, each only when asked:
//! - `fix_catalog`: a missing or damaged catalog is rebuilt from the tables' descriptor files
//!   and the regions' info files and manifests (`catalog.rs`); a damaged one is sidelined.
//! - `fix_manifests`: a missing or damaged region manifest is rebuilt from the store files in
//!   the region's directory, plus the files of the parents the catalog says it read.
//! - `sideline_corrupt_files`: store files that do not open (or are missing) leave their
//!   manifest, and the damaged ones move to the sideline; the region then opens without them.
//! - `fix_wal`: a WAL segment damaged in the middle is cut there, its cut bytes kept beside it.
//!
//! Nothing is deleted: what a repair takes out goes to `hbck/<time>/` below the data
//! directory, which no cleaner touches.

mod catalog;

use std::path::{Path, PathBuf};

use basalt_model::Result;

use crate::catalog::{Catalog, TableEntry};
use basalt_storage::block_cache::BlockCache;
use basalt_storage::env::Env;
use basalt_storage::manifest::VersionedFile;
use basalt_storage::region::repair;
use basalt_storage::storefile::{FileId, StoreFile};

/// What to repair; everything off checks only.
#[derive(Clone, Copy, Debug, Default)]
pub struct Repairs {
    pub fix_catalog: bool,
    pub fix_manifests: bool,
    pub sideline_corrupt_files: bool,
    pub fix_wal: bool,
}

/// One thing hbck found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// A stable name (`MISSING_MANIFEST`, `DAMAGED_STORE_FILE`, ...).
    pub kind: &'static str,
    pub detail: String,
    /// An inconsistency (as opposed to a note).
    pub problem: bool,
    /// Repaired by this run.
    pub fixed: bool,
}

impl Finding {
    fn problem(kind: &'static str, detail: String) -> Finding {
        Finding {
            kind,
            detail,
            problem: true,
            fixed: false,
        }
    }

    fn note(kind: &'static str, detail: String) -> Finding {
        Finding {
            kind,
            detail,
            problem: false,
            fixed: false,
        }
    }

    fn fixed(mut self) -> Finding {
        self.fixed = true;
        self
    }
}

/// What a run found and did.
#[derive(Debug, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub tables: usize,
    pub regions: usize,
    pub store_files: usize,
    pub wal_segments: usize,
}

impl Report {
    /// Inconsistencies this run did not repair.
    #[must_use]
    pub fn unresolved(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.problem && !f.fixed)
            .count()
    }
}

/// Checks `dir` (which no process may hold) and makes the repairs asked for.
///
/// # Errors
/// The directory is in use, or cannot be read or written.
pub fn run(env: &Env, dir: &Path, repairs: Repairs) -> Result<Report> {
    let _lock = crate::database::acquire_lock(env, dir)?;
    let mut hbck = Hbck {
        env,
        dir,
        repairs,
        sideline: dir
            .join("hbck")
            .join(format!("{:020}", env.now_ms().max(0))),
        report: Report::default(),
    };
    if let Some(catalog) = hbck.catalog()? {
        hbck.check_tables(&catalog)?;
    }
    hbck.check_wal()?;
    hbck.note_kept()?;
    Ok(hbck.report)
}

struct Hbck<'a> {
    env: &'a Env,
    dir: &'a Path,
    repairs: Repairs,
    /// Where repairs move what they take out.
    sideline: PathBuf,
    report: Report,
}

impl Hbck<'_> {
    fn push(&mut self, f: Finding) {
        self.report.findings.push(f);
    }

    /// Moves `path` below the sideline, keeping its path below the data directory.
    fn set_aside(&self, path: &Path) -> Result<PathBuf> {
        let rel = path.strip_prefix(self.dir).unwrap_or(path);
        let dest = self.sideline.join(rel);
        if let Some(parent) = dest.parent() {
            self.env.create_dir_all(parent)?;
        }
        self.env.rename(path, &dest)?;
        Ok(dest)
    }

    /// The catalog, rebuilt when missing or damaged and asked to; `None` when there is none
    /// to check against.
    fn catalog(&mut self) -> Result<Option<Catalog>> {
        let cdir = self.dir.join("catalog");
        let loaded = Catalog::load(self.env, &cdir);
        let problem = match loaded {
            Ok((_, Some(c))) => return Ok(Some(c)),
            Ok((_, None)) if !self.dir.join("data").exists() => return Ok(None),
            Ok((_, None)) => Finding::problem(
                "MISSING_CATALOG",
                format!(
                    "{} has no CATALOG-* file, but data/ holds table directories",
                    cdir.display()
                ),
            ),
            Err(e) => Finding::problem("DAMAGED_CATALOG", e.to_string()),
        };
        if !self.repairs.fix_catalog {
            self.push(problem);
            return Ok(None);
        }
        for f in self.env.list(&cdir)? {
            if f.starts_with("CATALOG-") {
                self.set_aside(&cdir.join(f))?;
            }
        }
        let (catalog, findings) = catalog::rebuild(self.env, self.dir, self.env.now_ms())?;
        let (mut vf, _) = VersionedFile::load::<Catalog>(self.env, &cdir, "CATALOG")?;
        vf.commit(self.env, &catalog)?;
        self.push(problem.fixed());
        self.report.findings.extend(findings);
        Ok(Some(catalog))
    }

    fn check_tables(&mut self, catalog: &Catalog) -> Result<()> {
        self.report.tables = catalog.tables.len();
        for (key, entry) in &catalog.tables {
            let (ns, t) = key.split_once(':').unwrap_or(("default", key));
            let tdir = self.dir.join("data").join(ns).join(t);
            if !tdir.exists() {
                self.push(Finding::problem(
                    "MISSING_TABLE_DIR",
                    format!(
                        "{key}: the catalog lists it, but {} is missing",
                        tdir.display()
                    ),
                ));
                continue;
            }
            for info in &entry.regions {
                self.report.regions += 1;
                self.check_region(key, entry, &tdir, info.id)?;
            }
            self.note_orphans(key, entry, &tdir)?;
        }
        Ok(())
    }

    fn check_region(
        &mut self,
        table: &str,
        entry: &TableEntry,
        tdir: &Path,
        id: u64,
    ) -> Result<()> {
        let rdir = tdir.join(id.to_string());
        let manifest = repair::has_manifest(self.env, &rdir);
        let problem = match manifest {
            Ok(true) => return self.check_files(table, &rdir, id),
            Ok(false) => Finding::problem(
                "MISSING_MANIFEST",
                format!("{table}: region {id} has no manifest ({})", rdir.display()),
            ),
            Err(e) => Finding::problem("DAMAGED_MANIFEST", format!("{table}: region {id}: {e}")),
        };
        if !self.repairs.fix_manifests {
            self.push(problem);
            return Ok(());
        }
        for f in self.env.list(&rdir)? {
            if f.starts_with("MANIFEST-") {
                self.set_aside(&rdir.join(f))?;
            }
        }
        let references = parents_files(self.env, tdir, entry, id);
        let rebuilt = repair::rebuild_manifest(self.env, &rdir, id, &references)?;
        self.push(problem.fixed());
        self.push(Finding::note(
            "MANIFEST_REBUILT",
            format!(
                "{table}: region {id} lists {} store files again",
                rebuilt.listed
            ),
        ));
        for (path, why) in rebuilt.damaged {
            let kept = self.set_aside(&path)?;
            self.push(
                Finding::problem(
                    "DAMAGED_STORE_FILE",
                    format!("{why}; moved to {}", kept.display()),
                )
                .fixed(),
            );
        }
        self.check_files(table, &rdir, id)
    }

    /// Opens every file the region's manifest lists.
    fn check_files(&mut self, table: &str, rdir: &Path, id: u64) -> Result<()> {
        let cache = std::sync::Arc::new(BlockCache::new(0));
        let files = repair::manifest_files(self.env, rdir, id)?;
        let mut bad: Vec<FileId> = Vec::new();
        for (family_dir, ids) in &files {
            let name = repair::family_name(family_dir).unwrap_or_default();
            for &fid in ids {
                self.report.store_files += 1;
                let path = basalt_storage::store::file_path(rdir, id, &name, fid);
                if let Err(e) = StoreFile::open(self.env, &path, fid, &name, &cache) {
                    let kind = if path.exists() {
                        "DAMAGED_STORE_FILE"
                    } else {
                        "MISSING_STORE_FILE"
                    };
                    let mut f = Finding::problem(kind, format!("{table}: region {id}: {e}"));
                    if self.repairs.sideline_corrupt_files {
                        // Only the region's own files move; a parent's stays for its readers.
                        if fid.region == id && path.exists() {
                            let kept = self.set_aside(&path)?;
                            f.detail.push_str(&format!("; moved to {}", kept.display()));
                        }
                        f = f.fixed();
                        bad.push(fid);
                    }
                    self.push(f);
                }
            }
        }
        if !bad.is_empty() {
            repair::remove_from_manifest(self.env, rdir, id, &bad)?;
        }
        Ok(())
    }

    /// Directories of the table the catalog does not know: the next open archives them.
    fn note_orphans(&mut self, table: &str, entry: &TableEntry, tdir: &Path) -> Result<()> {
        let known: Vec<String> = entry
            .regions
            .iter()
            .chain(entry.retired.iter().map(|r| &r.info))
            .map(|r| r.id.to_string())
            .collect();
        for r in self.env.list(tdir)? {
            if !r.starts_with('.') && !known.contains(&r) {
                self.push(Finding::note(
                    "ORPHAN_REGION_DIR",
                    format!("{table}: directory {r} is no region the catalog lists; the next open archives it"),
                ));
            }
        }
        Ok(())
    }

    /// Checks every log (each server's, and one older versions wrote in `wal/` itself): a
    /// torn tail of a log's last segment is what a crash leaves, and the next open cuts it.
    fn check_wal(&mut self) -> Result<()> {
        let root = self.dir.join("wal");
        for dir in crate::regionserver::log_dirs(self.env, &root)? {
            let log = crate::regionserver::log_segments(self.env, &dir)?;
            self.report.wal_segments += log.len();
            let last = basalt_storage::wal::replay::last_with_records(self.env, &log)?;
            for (i, path) in log.iter().enumerate() {
                self.check_wal_segment(path, i >= last)?;
            }
        }
        Ok(())
    }

    fn check_wal_segment(&mut self, path: &Path, last: bool) -> Result<()> {
        let data = self.env.read_all(path)?;
        let decoded = basalt_storage::wal::replay::decode_segment(&data, path, &mut |_| Ok(()));
        let stop = match decoded {
            Ok(d) => d.stop,
            Err(e) => {
                self.push(Finding::problem("DAMAGED_WAL", e.to_string()));
                return Ok(());
            }
        };
        let Some(stop) = stop else { return Ok(()) };
        // The next open cuts a torn tail, as after any crash, and the zeros of a segment
        // never closed (replay's rules).
        if stop.torn && last || basalt_storage::wal::replay::unwritten(&data[stop.pos..]) {
            return Ok(());
        }
        let problem = Finding::problem(
            "DAMAGED_WAL",
            format!("{}: {} at offset {}", path.display(), stop.why, stop.pos),
        );
        if !self.repairs.fix_wal {
            self.push(problem);
            return Ok(());
        }
        basalt_storage::wal::replay::set_aside(self.env, path, &data, stop.pos, stop.why)?;
        self.env.truncate(path, stop.pos as u64)?;
        self.push(problem.fixed());
        Ok(())
    }

    /// What the archive, the sideline and damaged WAL tails hold.
    fn note_kept(&mut self) -> Result<()> {
        let archive = basalt_storage::archive::Archive::new(self.env, self.dir);
        let archived = archive.contents()?;
        if !archived.is_empty() {
            self.push(Finding::note(
                "ARCHIVED",
                format!("{} files wait in archive/ for the cleaner", archived.len()),
            ));
        }
        let root = self.dir.join("wal");
        for dir in crate::regionserver::log_dirs(self.env, &root)? {
            for f in self.env.list(&dir)? {
                if f.contains(".damaged-") {
                    let rel = dir.join(&f);
                    let rel = rel.strip_prefix(self.dir).unwrap_or(&rel);
                    self.push(Finding::note(
                        "WAL_BYTES_KEPT",
                        format!(
                            "{} holds bytes cut from a damaged WAL segment",
                            rel.display()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The own files of the retired regions `id` took over from, by family directory: what a
/// rebuilt manifest of `id` must reference.
fn parents_files(
    env: &Env,
    tdir: &Path,
    entry: &TableEntry,
    id: u64,
) -> std::collections::BTreeMap<String, Vec<FileId>> {
    let mut out: std::collections::BTreeMap<String, Vec<FileId>> = Default::default();
    for parent in entry.retired.iter().filter(|r| r.successors.contains(&id)) {
        let pdir = tdir.join(parent.info.id.to_string());
        if let Ok(files) = repair::manifest_files(env, &pdir, parent.info.id) {
            for (family, ids) in files {
                out.entry(family)
                    .or_default()
                    .extend(ids.into_iter().filter(|f| f.region == parent.info.id));
            }
        }
    }
    out
}
