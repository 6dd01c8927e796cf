//! How a simulated run ends: the cluster settles (no more faults, every paused server's
//! session ends, the master's chore runs until every region serves), then every checker:
//! - per-cell linearizability of the clients' history, with a final read of every cell
//!   (so an acknowledged write that was lost, or a stale read, fails it);
//! - the big linked list: no node names a node that is not there;
//! - the invariant sweep: each region open on exactly one live server, at the epoch the
//!   catalog gives; no dead server or recovery left; no log chunk above a fence; no
//!   manifest naming a missing file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use basalt_api::Table;
use basalt_model::ops::Get;
use basalt_model::Result;
use basalt_storage::env::ObjectStore as _;
use basalt_storage::region::repair;
use basalt_testkit::checkers::linearizability::{check_each, CellModel, Verdict};
use basalt_testkit::checkers::linked_list;
use bytes::Bytes;

use super::{apply, list_row, register_row, Health, Sim, ROWS};
use crate::cluster::RegionServerAdmin as _;

/// Rounds of the master's chore a settling cluster may take.
const SETTLE_ROUNDS: usize = 8;

impl Sim {
    /// Ends the schedule: faults stop, cut-off servers' sessions end and every zombie
    /// exits, a master and a live server are there, and the chore runs until every region
    /// serves and no recovery is left.
    pub(super) fn settle(&mut self) {
        self.flaky.set_rate(0);
        while self.pick(Health::CutOff).is_some() {
            self.expire_cut_off();
        }
        while self.pick(Health::Zombie).is_some() {
            self.zombie_exits();
        }
        if self.master.is_none() {
            self.start_master();
        }
        if self.pick(Health::Live).is_none() {
            self.start_server();
        }
        for _ in 0..SETTLE_ROUNDS {
            self.chore();
            if self.unsettled().is_none() {
                return;
            }
        }
        let why = self.unsettled().unwrap_or_default();
        self.fail(&format!("the cluster did not settle: {why}"));
    }

    fn live_names(&self) -> BTreeSet<String> {
        self.servers
            .iter()
            .filter(|s| s.health == Health::Live)
            .map(|s| s.rs.name())
            .collect()
    }

    /// What keeps the cluster from being settled, if anything.
    fn unsettled(&self) -> Option<String> {
        let Some(m) = self.master.as_ref().map(|m| &m.master) else {
            return Some("no master".into());
        };
        let c = m.catalog();
        let live = self.live_names();
        let open = self.open_regions(m);
        for e in c.tables.values() {
            for r in &e.regions {
                let server = c.assignments.get(&r.id).and_then(|a| a.server.clone());
                if !server.as_ref().is_some_and(|s| live.contains(s)) {
                    return Some(format!("region {} on {server:?}", r.id));
                }
                let serving: Vec<&String> = open
                    .get(&r.id)
                    .into_iter()
                    .flatten()
                    .map(|(s, _)| s)
                    .collect();
                if serving != [server.as_ref().unwrap()] {
                    return Some(format!(
                        "region {} assigned to {server:?}, open on {serving:?}",
                        r.id
                    ));
                }
            }
        }
        if !c.dead_servers.is_empty() {
            return Some(format!("dead servers left: {:?}", c.dead_servers));
        }
        None
    }

    /// The live servers holding each region, with the epoch each opened it at.
    fn open_regions(&self, m: &super::ClusterMaster) -> BTreeMap<u64, Vec<(String, u64)>> {
        let mut open: BTreeMap<u64, Vec<(String, u64)>> = BTreeMap::new();
        for s in self.servers.iter().filter(|s| s.health == Health::Live) {
            let report = s.rs.report(m.epoch()).unwrap();
            for r in report.regions {
                open.entry(r.info.id)
                    .or_default()
                    .push((s.rs.name(), r.open_epoch));
            }
        }
        open
    }

    /// Panics with the seed's schedule.
    pub(super) fn fail(&self, what: &str) -> ! {
        panic!(
            "seed {}: {what}\nthe schedule:\n{}\nseed {}: {what}",
            self.seed,
            self.log.join("\n"),
            self.seed,
        );
    }

    pub(super) fn check_all(&mut self) {
        self.sweep();
        self.final_reads();
        self.check_history();
        self.check_linked_list();
    }

    /// The table for `row` as a client sees it on its `attempt`: the first may go through
    /// a stale cache; after an error the client asks the master again, as HBase's does.
    fn settled_table(&mut self, row: &[u8], attempt: usize) -> Result<Arc<dyn Table>> {
        if attempt == 0 {
            self.table_for(row)
        } else {
            self.table_via(row, false)
        }
    }

    /// Reads `row`'s column `q` where the master says, trying a few times (a client whose
    /// cache is stale asks again).
    fn read_settled(&mut self, row: &[u8], q: &str) -> Option<Bytes> {
        let mut last = None;
        for attempt in 0..5 {
            let table = self.settled_table(row, attempt);
            match table.and_then(|t| {
                t.get(Get::new(Bytes::copy_from_slice(row)).add_column("f", q.to_owned()))
            }) {
                Ok(r) => {
                    return r
                        .value(b"f", q.as_bytes())
                        .map(bytes::Bytes::copy_from_slice)
                }
                Err(e) => last = Some(e),
            }
        }
        self.fail(&format!("{row:?} does not read once settled: {last:?}"));
    }

    /// A last read of every cell, in the history: each must show the last write.
    fn final_reads(&mut self) {
        for i in 0..ROWS {
            let row = register_row(i);
            for (q, counter) in [("v", false), ("n", true)] {
                let mut answer = Err(None);
                for attempt in 0..5 {
                    let call = self.tick();
                    let t = self.settled_table(row.as_bytes(), attempt);
                    match t.and_then(|t| apply(t.as_ref(), &row, counter, &super::CellOp::Get)) {
                        Ok(a) => {
                            answer = Ok((call, a));
                            break;
                        }
                        Err(e) => answer = Err(Some(e)),
                    }
                }
                let (call, a) = match answer {
                    Ok(got) => got,
                    Err(e) => self.fail(&format!("{row}/{q} does not read once settled: {e:?}")),
                };
                self.record(format!("{row}/{q}"), super::CellOp::Get, call, Ok(a));
            }
        }
    }

    fn check_history(&self) {
        if let Err((cell, verdict)) = check_each(&CellModel, self.history.clone()) {
            let ops: Vec<String> = self
                .history
                .iter()
                .filter(|(c, _)| *c == cell)
                .map(|(_, op)| format!("{op:?}"))
                .collect();
            let Verdict::Illegal { longest } = verdict else {
                unreachable!("check_each reports only illegal histories")
            };
            self.fail(&format!(
                "the history of {cell} is not linearizable (longest legal prefix {longest:?}):\n{}",
                ops.join("\n")
            ));
        }
    }

    /// Reads back every node any list generator wrote or tried to, and verifies the lists.
    fn check_linked_list(&mut self) {
        let keys = self.list_keys.clone();
        let mut nodes = BTreeMap::new();
        for key in keys {
            if let Some(v) = self.read_settled(&list_row(&key), "ll") {
                nodes.insert(key, v);
            }
        }
        let report = linked_list::verify(nodes);
        if let Err(e) = report.check(&self.lists) {
            self.fail(&format!("the linked list: {e} ({report:?})"));
        }
    }

    /// Each region open on exactly one live server, as the catalog says; nothing left to
    /// recover; no log chunk above a fence; every file a manifest names is there.
    fn sweep(&self) {
        let m = &self.master.as_ref().unwrap().master;
        let c = m.catalog();
        let open = self.open_regions(m);
        let mut regions = BTreeSet::new();
        for e in c.tables.values() {
            for r in &e.regions {
                regions.insert(r.id);
                let a = &c.assignments[&r.id];
                let want = vec![(a.server.clone().unwrap(), a.open_epoch)];
                if open.get(&r.id) != Some(&want) {
                    self.fail(&format!(
                        "region {} open on {:?}, the catalog says {want:?}",
                        r.id,
                        open.get(&r.id)
                    ));
                }
            }
        }
        let stray: Vec<&u64> = open.keys().filter(|id| !regions.contains(id)).collect();
        if !stray.is_empty() {
            self.fail(&format!(
                "regions open that the catalog does not list: {stray:?}"
            ));
        }
        if !m.recoveries().is_empty() {
            self.fail(&format!("recoveries left: {:?}", m.recoveries()));
        }
        if let Err(e) = fences_end_logs(&self.cluster.store) {
            self.fail(&e);
        }
        self.check_manifests(m, &c);
    }

    fn check_manifests(&self, m: &super::ClusterMaster, c: &crate::catalog::Catalog) {
        let env = self.cluster.env();
        for e in c.tables.values() {
            let tdir = m.table_dir(&e.descriptor.table_name());
            for r in &e.regions {
                let rdir = tdir.join(r.id.to_string());
                let files = repair::manifest_files(&env, &rdir, r.id).unwrap();
                for (family_dir, ids) in files {
                    let family = repair::family_name(&family_dir).unwrap();
                    for id in ids {
                        let path = basalt_storage::store::file_path(&rdir, r.id, &family, id);
                        if !env.exists(&path).unwrap() {
                            self.fail(&format!(
                                "region {}'s manifest names {}, which is missing",
                                r.id,
                                path.display()
                            ));
                        }
                    }
                }
            }
        }
    }
}

/// No log segment holds a chunk with bytes above its first fence (an empty chunk): a
/// fenced writer stored nothing past the point the master read to.
fn fences_end_logs(store: &basalt_storage::env::MemoryStore) -> Result<(), String> {
    let mut segments: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for key in store.list_all("wal/").map_err(|e| e.to_string())? {
        let path = Path::new(&key);
        let (Some(segment), Some(chunk)) = (path.parent(), path.file_name()) else {
            continue;
        };
        let Ok(n) = chunk.to_string_lossy().parse::<u64>() else {
            continue; // the fence marker, not a chunk
        };
        let size = store.size(&key).map_err(|e| e.to_string())?.unwrap_or(0);
        segments
            .entry(segment.display().to_string())
            .or_default()
            .push((n, size));
    }
    for (segment, chunks) in segments {
        let Some(fence) = chunks.iter().filter(|c| c.1 == 0).map(|c| c.0).min() else {
            continue;
        };
        if let Some(above) = chunks.iter().find(|c| c.0 > fence && c.1 > 0) {
            return Err(format!(
                "{segment}: chunk {} holds {} bytes above the fence at chunk {fence}",
                above.0, above.1
            ));
        }
    }
    Ok(())
}
