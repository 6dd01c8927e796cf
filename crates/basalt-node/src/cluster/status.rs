//! What the active master tells about the cluster: servers live, dead and decommissioned,
//! region loads from the servers' reports, regions in transition; and finding a region by
//! the name a user gives.

use std::collections::{BTreeMap, BTreeSet};

use basalt_api::{ClusterStatus, RegionReport, ServerStatus};
use basalt_model::region::RegionLoad;
use basalt_model::{Error, Result, TableName};

use super::{ClusterMaster, Compaction};
use crate::database::status::add_load;

impl ClusterMaster {
    /// Records the live servers seen now; returns the servers this master knows (seen live
    /// since it took over, or recovered) that are gone (HBase's dead servers).
    pub(super) fn note_live(&self, live: &[String]) -> Vec<String> {
        let mut seen = self.seen.lock();
        seen.extend(live.iter().cloned());
        seen.iter().filter(|s| !live.contains(s)).cloned().collect()
    }

    /// `status`: masters, live servers with their regions and loads (from their reports),
    /// dead and decommissioned servers, and the regions of enabled tables that are not open
    /// on a live server.
    ///
    /// # Errors
    /// `Io` reaching the coordinator.
    pub fn status(&self) -> Result<ClusterStatus> {
        let (live, _) = self.coordinator.live_servers()?;
        let dead = self.note_live(&live);
        let c = self.catalog();
        let mut servers = Vec::new();
        for name in &live {
            let mut s = ServerStatus {
                name: name.clone(),
                ..ServerStatus::default()
            };
            match self
                .servers
                .connect(name)
                .and_then(|rs| rs.report(self.epoch))
            {
                Ok(report) => {
                    s.regions = report.regions.len();
                    for r in &report.regions {
                        add_load(&mut s.load, &r.load);
                    }
                }
                Err(e) => {
                    tracing::warn!(server = %name, error = %e, "no report from a live region server");
                }
            }
            servers.push(s);
        }
        let mut in_transition = Vec::new();
        for entry in c.tables.values().filter(|e| e.enabled) {
            let table = entry.descriptor.table_name();
            for info in &entry.regions {
                let server = c.assignments.get(&info.id).and_then(|a| a.server.clone());
                let why = match server {
                    None => "OFFLINE (not assigned)".to_owned(),
                    Some(s) if live.contains(&s) => continue,
                    Some(s) => format!("OFFLINE (its server {s} is gone)"),
                };
                in_transition.push(format!("{} {why}", info.region_name_string(&table)));
            }
        }
        Ok(ClusterStatus {
            cluster_id: c.cluster_id.clone(),
            master: self.name.clone(),
            backup_masters: self.coordinator.backup_masters()?,
            servers,
            dead_servers: dead,
            recoveries: self.recovery_lines(&c),
            decommissioned: c.decommissioned.iter().cloned().collect(),
            in_transition,
            balancer_on: c.balancer_on,
            answered_by: self.name.clone(),
        })
    }

    /// Each region of `name` with its server and its load as the server reports it.
    ///
    /// # Errors
    /// `TableNotFound`; `Io` reaching the coordinator.
    pub fn region_reports(&self, name: &TableName) -> Result<Vec<RegionReport>> {
        let c = self.catalog();
        let entry = c.table(name)?;
        let mut loads: BTreeMap<u64, RegionLoad> = BTreeMap::new();
        let servers: BTreeSet<String> = entry
            .regions
            .iter()
            .filter_map(|r| c.assignments.get(&r.id).and_then(|a| a.server.clone()))
            .collect();
        for s in servers {
            match self
                .servers
                .connect(&s)
                .and_then(|rs| rs.report(self.epoch))
            {
                Ok(report) => loads.extend(report.regions.into_iter().map(|r| (r.info.id, r.load))),
                Err(e) => {
                    tracing::warn!(server = %s, error = %e, "no report from a region server");
                }
            }
        }
        Ok(entry
            .regions
            .iter()
            .map(|info| RegionReport {
                region: info.clone(),
                load: loads.remove(&info.id).unwrap_or_default(),
                server: c
                    .assignments
                    .get(&info.id)
                    .and_then(|a| a.server.clone())
                    .unwrap_or_default(),
            })
            .collect())
    }

    /// The id of the region a user names by its full or encoded name.
    ///
    /// # Errors
    /// `UnknownRegion`.
    pub fn region_id(&self, name: &[u8]) -> Result<u64> {
        let c = self.catalog();
        for entry in c.tables.values() {
            let table = entry.descriptor.table_name();
            for info in &entry.regions {
                if info.region_name(&table)[..] == *name
                    || info.encoded_name(&table).as_bytes() == name
                {
                    return Ok(info.id);
                }
            }
        }
        Err(Error::UnknownRegion(
            String::from_utf8_lossy(name).into_owned(),
        ))
    }

    /// `flush` or `compact`: each region of the table, on its server.
    ///
    /// # Errors
    /// `TableNotFound`; the first region that failed (the others are still done).
    pub fn maintain_table(&self, name: &TableName, how: Compaction) -> Result<()> {
        let c = self.catalog();
        let entry = c.table(name)?;
        let mut first_error = None;
        for info in &entry.regions {
            let Some(server) = c.assignments.get(&info.id).and_then(|a| a.server.clone()) else {
                continue;
            };
            let done = self
                .servers
                .connect(&server)
                .and_then(|rs| rs.flush_region(self.epoch, info.id, how));
            if let Err(e) = done {
                tracing::warn!(region = info.id, server, error = %e, "flush or compaction failed");
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
