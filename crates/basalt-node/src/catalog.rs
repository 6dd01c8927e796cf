//! The catalog: namespaces, tables (schema, enabled state) and their regions, durable in a
//! versioned metadata file (docs/formats/manifest.md). It plays the part of `hbase:meta` and
//! `hbase:namespace`.

use std::collections::{BTreeMap, BTreeSet};

use basalt_model::name::{validate_namespace, DEFAULT_NAMESPACE, SYSTEM_NAMESPACE};
use basalt_model::{Error, Result, TableDescriptor, TableName};
use serde::{Deserialize, Serialize};

use basalt_storage::region::RegionInfo;

/// A table's catalog entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableEntry {
    pub descriptor: TableDescriptor,
    pub enabled: bool,
    /// Online regions in key order; together they cover the whole key space, with no gap
    /// and no overlap.
    pub regions: Vec<RegionInfo>,
    /// Regions split or merged away whose files online regions still read (HBase keeps
    /// them in `hbase:meta` until its catalog janitor finds no reference left).
    #[serde(default)]
    pub retired: Vec<RetiredRegion>,
}

impl TableEntry {
    /// The start keys of the table's regions after the first: what `truncate_preserve` and
    /// `get_splits` give back.
    #[must_use]
    pub fn split_keys(&self) -> Vec<bytes::Bytes> {
        self.regions
            .iter()
            .skip(1)
            .map(|r| r.start_key.clone())
            .collect()
    }

    /// A split's or merge's switch: `made` in the place of `parents` (adjacent, in key
    /// order), which are retired as `retired_as`, naming `made` as their successors.
    pub fn replace_regions(
        &mut self,
        parents: &[RegionInfo],
        made: &[RegionInfo],
        retired_as: RegionState,
        at_ms: i64,
    ) {
        let gone: std::collections::BTreeSet<u64> = parents.iter().map(|p| p.id).collect();
        let at = self
            .regions
            .iter()
            .position(|r| gone.contains(&r.id))
            .unwrap_or(self.regions.len());
        self.regions.retain(|r| !gone.contains(&r.id));
        self.regions.splice(at..at, made.iter().cloned());
        let successors: Vec<u64> = made.iter().map(|r| r.id).collect();
        self.retired.extend(parents.iter().map(|p| RetiredRegion {
            info: p.clone(),
            state: retired_as,
            successors: successors.clone(),
            at_ms,
        }));
    }
}

/// A region that stopped serving because it was split or merged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetiredRegion {
    pub info: RegionInfo,
    /// `SPLIT` or `MERGED`.
    pub state: RegionState,
    /// The regions that took its rows: two daughters, or the merged region.
    pub successors: Vec<u64>,
    /// When it was retired (ms).
    pub at_ms: i64,
}

/// A region's state as `hbase:meta` names it (`info:state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RegionState {
    Open,
    Split,
    Merged,
}

impl RegionState {
    /// The name HBase writes.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RegionState::Open => "OPEN",
            RegionState::Split => "SPLIT",
            RegionState::Merged => "MERGED",
        }
    }
}

/// Where a region is open in a cluster, and how many times it has been opened.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionAssignment {
    /// The server it is assigned to (`host,port,start code`); `None` while unassigned.
    pub server: Option<String>,
    /// Raised by one at every assignment and never lowered (HBase's open sequence of a
    /// region's transitions): an open or a report carrying a lower epoch is stale.
    pub open_epoch: u64,
}

/// The catalog document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Catalog {
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// Tables by full name (`ns:qualifier`, always with the namespace).
    pub tables: BTreeMap<String, TableEntry>,
    pub next_region_id: u64,
    /// The cluster's id (HBase's `hbase.id`), a random UUID made when the store is created;
    /// empty in catalogs written before it existed, which get one at their next open.
    #[serde(default)]
    pub cluster_id: String,
    /// Cluster mode: each region's assignment, by region id.
    #[serde(default)]
    pub assignments: BTreeMap<u64, RegionAssignment>,
    /// Cluster mode: the epoch of the master that committed this version. A new master
    /// commits a version with its epoch before anything else, so a deposed master's next
    /// commit finds its version taken and fails.
    #[serde(default)]
    pub master_epoch: u64,
    /// Cluster mode: servers decommissioned (no region is assigned to them).
    #[serde(default)]
    pub decommissioned: BTreeSet<String>,
    /// Cluster mode: whether the balancer runs (`balance_switch`).
    #[serde(default = "balancer_default")]
    pub balancer_on: bool,
    /// Cluster mode: region servers found dead whose recovery (log split, reassignment of
    /// their regions) is not finished, with when the master found each dead (ms). A new
    /// master resumes each.
    #[serde(default)]
    pub dead_servers: BTreeMap<String, i64>,
}

fn balancer_default() -> bool {
    true
}

/// A new random cluster id in UUID form (version 4), as HBase's `ClusterId` makes.
#[must_use]
pub fn new_cluster_id() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

impl Default for Catalog {
    fn default() -> Self {
        let mut namespaces = BTreeMap::new();
        namespaces.insert(DEFAULT_NAMESPACE.to_owned(), BTreeMap::new());
        namespaces.insert(SYSTEM_NAMESPACE.to_owned(), BTreeMap::new());
        Catalog {
            namespaces,
            tables: BTreeMap::new(),
            next_region_id: 1,
            cluster_id: new_cluster_id(),
            assignments: BTreeMap::new(),
            master_epoch: 0,
            decommissioned: BTreeSet::new(),
            balancer_on: true,
            dead_servers: BTreeMap::new(),
        }
    }
}

/// The catalog key of a table.
pub use basalt_storage::region::repair::table_key;

impl Catalog {
    /// Loads the newest complete catalog version in `dir` (`None`: there is none) and checks
    /// it ([`Catalog::check`]), so that bytes from disk are refused with a clear error, never
    /// trusted into a panic.
    ///
    /// # Errors
    /// `Corruption`: a damaged version, or one that fails the check; `Io`.
    pub fn load(
        env: &basalt_storage::env::Env,
        dir: &std::path::Path,
    ) -> Result<(basalt_storage::manifest::VersionedFile, Option<Catalog>)> {
        let (vf, catalog) =
            basalt_storage::manifest::VersionedFile::load::<Catalog>(env, dir, "CATALOG")?;
        if let Some(c) = &catalog {
            c.check()
                .map_err(|detail| Error::corruption("catalog", dir, detail))?;
        }
        Ok((vf, catalog))
    }

    /// Checks what the checksum cannot: each table has a valid name, is filed under its own
    /// key in a namespace the catalog lists, and has regions that cover every row key once,
    /// in order.
    ///
    /// # Errors
    /// What is wrong, naming the table.
    pub fn check(&self) -> std::result::Result<(), String> {
        for ns in self.namespaces.keys() {
            validate_namespace(ns).map_err(|e| format!("namespace {ns:?} is invalid: {e}"))?;
        }
        for (key, entry) in &self.tables {
            let (ns, q) = (&entry.descriptor.name.0, &entry.descriptor.name.1);
            let name = TableName::new(ns, q)
                .map_err(|e| format!("table {key:?} has an invalid name: {e}"))?;
            if table_key(&name) != *key {
                return Err(format!("table {name} is filed under {key:?}"));
            }
            if !self.namespaces.contains_key(ns) {
                return Err(format!(
                    "table {name} is in namespace {ns}, which the catalog does not list"
                ));
            }
            check_regions(&name, &entry.regions)?;
        }
        Ok(())
    }

    ///
    /// # Errors
    /// `IllegalArgument` for a bad name, `NamespaceExists`.
    pub fn create_namespace(&mut self, name: &str, props: BTreeMap<String, String>) -> Result<()> {
        validate_namespace(name)?;
        if self.namespaces.contains_key(name) {
            return Err(Error::NamespaceExists(name.to_owned()));
        }
        self.namespaces.insert(name.to_owned(), props);
        Ok(())
    }

    /// Removes an empty, non-reserved namespace.
    ///
    /// # Errors
    /// `NamespaceNotFound`, or `Constraint` for a reserved or non-empty namespace.
    pub fn drop_namespace(&mut self, name: &str) -> Result<()> {
        if name == DEFAULT_NAMESPACE || name == SYSTEM_NAMESPACE {
            return Err(Error::Constraint(format!(
                "Reserved namespace {name} cannot be removed."
            )));
        }
        self.namespace(name)?;
        let n = self
            .tables
            .keys()
            .filter(|k| k.split_once(':').is_some_and(|(ns, _)| ns == name))
            .count();
        if n > 0 {
            return Err(Error::Constraint(format!(
                "Only empty namespaces can be removed. Namespace {name} has {n} tables"
            )));
        }
        self.namespaces.remove(name);
        Ok(())
    }

    /// A namespace's properties.
    ///
    /// # Errors
    /// `NamespaceNotFound`.
    pub fn namespace(&self, name: &str) -> Result<&BTreeMap<String, String>> {
        self.namespaces
            .get(name)
            .ok_or_else(|| Error::NamespaceNotFound(name.to_owned()))
    }

    /// Sets and unsets namespace properties.
    ///
    /// # Errors
    /// `NamespaceNotFound`.
    pub fn alter_namespace(
        &mut self,
        name: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()> {
        let props = self
            .namespaces
            .get_mut(name)
            .ok_or_else(|| Error::NamespaceNotFound(name.to_owned()))?;
        props.extend(set);
        for k in unset {
            props.remove(k);
        }
        Ok(())
    }

    /// The region holding `row` of `table`, and the server it is assigned to.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotEnabled`.
    pub fn locate(&self, t: &TableName, row: &[u8]) -> Result<(RegionInfo, Option<String>)> {
        let entry = self.table(t)?;
        if !entry.enabled {
            return Err(Error::TableNotEnabled(t.to_string()));
        }
        let n = entry.regions.partition_point(|r| r.start_key[..] <= *row);
        // `check` refuses a table without regions; should one appear, an error, not a panic.
        let info = entry
            .regions
            .get(n.saturating_sub(1))
            .cloned()
            .ok_or_else(|| Error::NotServingRegion(format!("{t} has no regions")))?;
        let server = self
            .assignments
            .get(&info.id)
            .and_then(|a| a.server.clone());
        Ok((info, server))
    }

    /// A table's entry.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn table(&self, t: &TableName) -> Result<&TableEntry> {
        self.tables
            .get(&table_key(t))
            .ok_or_else(|| Error::TableNotFound(t.to_string()))
    }

    /// A table's entry, mutable.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn table_mut(&mut self, t: &TableName) -> Result<&mut TableEntry> {
        self.tables
            .get_mut(&table_key(t))
            .ok_or_else(|| Error::TableNotFound(t.to_string()))
    }

    /// A new region id: the time in ms, as HBase's region ids are, made larger than every id
    /// given before (so ids stay unique however the clock moves).
    pub fn allocate_region_id(&mut self, now_ms: i64) -> u64 {
        let now = u64::try_from(now_ms).unwrap_or(0);
        self.next_region_id = (self.next_region_id + 1).max(now);
        self.next_region_id
    }

    /// Region boundaries for a new table with `split_keys`: sorted, unique, non-empty keys.
    ///
    /// # Errors
    /// `IllegalArgument` for an empty or repeated split key.
    pub fn new_regions(
        &mut self,
        split_keys: &[bytes::Bytes],
        now_ms: i64,
    ) -> Result<Vec<RegionInfo>> {
        let mut keys = split_keys.to_vec();
        keys.sort();
        if keys.iter().any(bytes::Bytes::is_empty) {
            return Err(Error::illegal(
                "Empty split key must not be passed in the split keys.",
            ));
        }
        if keys.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::illegal(
                "All split keys must be unique, found duplicate",
            ));
        }
        let mut bounds = vec![bytes::Bytes::new()];
        bounds.extend(keys);
        bounds.push(bytes::Bytes::new());
        let regions = bounds
            .windows(2)
            .map(|w| RegionInfo {
                id: self.allocate_region_id(now_ms),
                start_key: w[0].clone(),
                end_key: w[1].clone(),
            })
            .collect();
        Ok(regions)
    }
}

/// A table's regions cover every row key once, in order: the first starts at the empty key,
/// each ends where the next starts, the last ends at the empty key.
fn check_regions(table: &TableName, regions: &[RegionInfo]) -> std::result::Result<(), String> {
    let (Some(first), Some(last)) = (regions.first(), regions.last()) else {
        return Err(format!("table {table} has no regions"));
    };
    let gap = regions.windows(2).find(|w| w[0].end_key != w[1].start_key);
    if !first.start_key.is_empty() || !last.end_key.is_empty() || gap.is_some() {
        return Err(format!(
            "the regions of table {table} do not cover the row keys once, in order"
        ));
    }
    Ok(())
}
