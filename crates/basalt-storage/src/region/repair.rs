//! What a region keeps on disk so that a lost catalog or manifest can be rebuilt offline
//! (`basalt hbck`), and the rebuild of a manifest from the files a region holds.
//!
//! # Format
//! `<region dir>/REGIONINFO-<n>`: the region's id and key range, and its table's name, as a
//! versioned metadata file (docs/formats/manifest.md), written when the region is created
//! (HBase's `.regioninfo`). `<table dir>/.tabledesc/TABLEINFO-<n>`: the table's descriptor,
//! written at creation and at every alter (HBase's `.tabledesc/.tableinfo`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt_model::{Error, Result, TableDescriptor, TableName};
use serde::{Deserialize, Serialize};

use super::{ManifestFile, RegionInfo, RegionManifest, StoreManifest};
use crate::block_cache::BlockCache;
use crate::env::Env;
use crate::manifest::VersionedFile;
use crate::storefile::{FileId, StoreFile};

/// The prefix of region info files in a region directory.
pub const REGION_INFO_PREFIX: &str = "REGIONINFO";
/// The prefix of table descriptor files in a table's `.tabledesc` directory.
pub const TABLE_INFO_PREFIX: &str = "TABLEINFO";
/// The directory of a table's descriptor files, inside its table directory.
pub const TABLE_INFO_DIR: &str = ".tabledesc";

/// A table's key in the catalog and in region info files: `ns:qualifier`, the namespace
/// always spelled out (unlike `TableName`'s display, which leaves out `default:`).
#[must_use]
pub fn table_key(t: &TableName) -> String {
    format!("{}:{}", t.namespace(), t.qualifier())
}

/// A region's identity as its directory records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionInfoFile {
    /// The table, `ns:qualifier`.
    pub table: String,
    pub info: RegionInfo,
}

/// Writes the region info file of `info` in `dir` unless one is there.
///
/// # Errors
/// `Io`; `Corruption` when an unreadable one is there.
pub fn write_region_info(env: &Env, dir: &Path, table: &str, info: &RegionInfo) -> Result<()> {
    let (mut vf, doc) = VersionedFile::load::<RegionInfoFile>(env, dir, REGION_INFO_PREFIX)?;
    if doc.is_none() {
        let doc = RegionInfoFile {
            table: table.to_owned(),
            info: info.clone(),
        };
        vf.commit(env, &doc)?;
    }
    Ok(())
}

/// The region info file in `dir`, if there is one.
///
/// # Errors
/// `Io`; `Corruption`.
pub fn read_region_info(env: &Env, dir: &Path) -> Result<Option<RegionInfoFile>> {
    if !has_prefixed(env, dir, REGION_INFO_PREFIX)? {
        return Ok(None);
    }
    Ok(VersionedFile::load(env, dir, REGION_INFO_PREFIX)?.1)
}

/// Commits `desc` as the table's newest descriptor file (`table_dir/.tabledesc`).
///
/// # Errors
/// `Io`; `Corruption` when the existing files are unreadable.
pub fn write_table_info(env: &Env, table_dir: &Path, desc: &TableDescriptor) -> Result<()> {
    let dir = table_dir.join(TABLE_INFO_DIR);
    let (mut vf, doc) = VersionedFile::load::<TableDescriptor>(env, &dir, TABLE_INFO_PREFIX)?;
    if doc.as_ref() != Some(desc) {
        vf.commit(env, desc)?;
    }
    Ok(())
}

/// The table's newest descriptor file, if there is one.
///
/// # Errors
/// `Io`; `Corruption`.
pub fn read_table_info(env: &Env, table_dir: &Path) -> Result<Option<TableDescriptor>> {
    let dir = table_dir.join(TABLE_INFO_DIR);
    if !has_prefixed(env, &dir, TABLE_INFO_PREFIX)? {
        return Ok(None);
    }
    Ok(VersionedFile::load(env, &dir, TABLE_INFO_PREFIX)?.1)
}

fn has_prefixed(env: &Env, dir: &Path, prefix: &str) -> Result<bool> {
    Ok(env
        .list(dir)?
        .iter()
        .any(|n| n.starts_with(prefix) && n[prefix.len()..].starts_with('-')))
}

/// Whether the region's manifest is there and reads (torn newest versions aside).
///
/// # Errors
/// `Corruption` for a damaged one; `Io`.
pub fn has_manifest(env: &Env, dir: &Path) -> Result<bool> {
    if !has_prefixed(env, dir, "MANIFEST")? {
        return Ok(false);
    }
    Ok(VersionedFile::load::<RegionManifest>(env, dir, "MANIFEST")?
        .1
        .is_some())
}

/// The files a region's manifest lists, by family directory name, oldest first (own files
/// and references).
///
/// # Errors
/// `Corruption`; `Io`.
pub fn manifest_files(env: &Env, dir: &Path, own: u64) -> Result<BTreeMap<String, Vec<FileId>>> {
    let (_, doc) = VersionedFile::load::<RegionManifest>(env, dir, "MANIFEST")?;
    let doc = doc.ok_or_else(|| Error::corruption("region", dir, "no manifest"))?;
    Ok(doc
        .stores
        .into_iter()
        .map(|(k, s)| (k, s.files.iter().map(|f| f.id(own)).collect()))
        .collect())
}

/// What rebuilding a manifest found.
#[derive(Debug, Default)]
pub struct RebuiltManifest {
    /// Files listed, own and references.
    pub listed: usize,
    /// Own files that did not open (damaged): left out of the manifest, and out of the
    /// region's directory by the caller.
    pub damaged: Vec<(PathBuf, String)>,
}

/// Writes a new manifest for region `own` in `dir` listing every store file found in its
/// family directories that opens, oldest first, plus `references` (files of the regions it
/// was split or merged from, by family directory name). A damaged newest manifest is set
/// aside by the caller first; older versions are superseded by the new one.
///
/// # Errors
/// `Io` listing or writing.
pub fn rebuild_manifest(
    env: &Env,
    dir: &Path,
    own: u64,
    references: &BTreeMap<String, Vec<FileId>>,
) -> Result<RebuiltManifest> {
    let cache = Arc::new(BlockCache::new(0));
    let mut out = RebuiltManifest::default();
    let mut stores: BTreeMap<String, StoreManifest> = BTreeMap::new();
    let mut next_file_id = 0;
    for family in env.list(dir)? {
        let fdir = dir.join(&family);
        if !env.is_dir(&fdir)? || family.starts_with('.') {
            continue;
        }
        let Some(name) = family_name(&family) else {
            continue;
        };
        let mut files: Vec<u64> = env
            .list(&fdir)?
            .iter()
            .filter_map(|n| u64::from_str_radix(n.strip_suffix(".sf")?, 16).ok())
            .collect();
        files.sort_unstable(); // file numbers grow with age
        let sm = stores.entry(family.clone()).or_default();
        for (region, file) in references
            .get(&family)
            .into_iter()
            .flatten()
            .map(|f| (f.region, f.file))
        {
            sm.files.push(ManifestFile::Reference { region, file });
            out.listed += 1;
        }
        for file in files {
            next_file_id = next_file_id.max(file);
            let id = FileId { region: own, file };
            let path = fdir.join(crate::store::file_name(file));
            match StoreFile::open(env, &path, id, &name, &cache) {
                Ok(f) => {
                    sm.flushed_seq_id = sm.flushed_seq_id.max(f.info().max_seq_id);
                    sm.files.push(ManifestFile::Own(file));
                    out.listed += 1;
                }
                Err(e) => out.damaged.push((path, e.to_string())),
            }
        }
    }
    for (family, refs) in references {
        if !stores.contains_key(family) && !refs.is_empty() {
            let sm = stores.entry(family.clone()).or_default();
            for f in refs {
                sm.files.push(ManifestFile::Reference {
                    region: f.region,
                    file: f.file,
                });
                out.listed += 1;
            }
        }
    }
    let (mut vf, _) = VersionedFile::load::<RegionManifest>(env, dir, "MANIFEST")?;
    vf.commit(
        env,
        &RegionManifest {
            next_file_id,
            stores,
        },
    )?;
    Ok(out)
}

/// Takes `gone` (damaged or missing files) out of the region's manifest, committing a new
/// version.
///
/// # Errors
/// `Corruption` when the manifest does not read; `Io`.
pub fn remove_from_manifest(env: &Env, dir: &Path, own: u64, gone: &[FileId]) -> Result<()> {
    let (mut vf, doc) = VersionedFile::load::<RegionManifest>(env, dir, "MANIFEST")?;
    let mut doc = doc.ok_or_else(|| Error::corruption("region", dir, "no manifest"))?;
    for sm in doc.stores.values_mut() {
        sm.files.retain(|f| !gone.contains(&f.id(own)));
    }
    vf.commit(env, &doc)
}

/// Writes the first, empty manifest of a region made to fill a hole in a table's key space.
///
/// # Errors
/// `Io`.
pub fn create_empty_region(env: &Env, dir: &Path, table: &str, info: &RegionInfo) -> Result<()> {
    super::Region::create_empty(env, dir, info.id)?;
    write_region_info(env, dir, table, info)
}

/// The family name of a family directory (hex), if it is one.
#[must_use]
pub fn family_name(dir_name: &str) -> Option<bytes::Bytes> {
    if dir_name.is_empty() || !dir_name.len().is_multiple_of(2) || !dir_name.is_ascii() {
        return None;
    }
    (0..dir_name.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&dir_name[i..i + 2], 16).ok())
        .collect::<Option<Vec<u8>>>()
        .map(bytes::Bytes::from)
}

#[cfg(test)]
mod tests {
    use basalt_model::ColumnFamilyDescriptor;

    use super::*;

    /// Descriptor files outlive the code that wrote them: a family attribute added later
    /// must default when an older file lacks it, or the table would not open.
    #[test]
    fn a_table_info_written_before_new_version_behavior_existed_reads_with_it_off() {
        let env = Env::default();
        let tmp = tempfile::tempdir().unwrap();
        let name = TableName::parse("t").unwrap();
        let desc = TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]);
        let mut old = serde_json::to_value(&desc).unwrap();
        for f in old["families"].as_array_mut().unwrap() {
            f.as_object_mut()
                .unwrap()
                .remove("new_version_behavior")
                .unwrap();
        }
        let dir = tmp.path().join(TABLE_INFO_DIR);
        let (mut vf, _) =
            VersionedFile::load::<TableDescriptor>(&env, &dir, TABLE_INFO_PREFIX).unwrap();
        vf.commit(&env, &old).unwrap();
        assert_eq!(
            read_table_info(&env, tmp.path()).unwrap(),
            Some(desc.clone())
        );

        let mut on = desc;
        on.families
            .values_mut()
            .for_each(|f| f.new_version_behavior = true);
        write_table_info(&env, tmp.path(), &on).unwrap();
        assert_eq!(read_table_info(&env, tmp.path()).unwrap(), Some(on));
    }
}
