//! A cluster in one process, deterministic: a master and region servers over one in-memory
//! object store and one in-memory coordination ensemble. The same code runs between
//! processes over ZooKeeper and shared storage (the process tests).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt_model::ops::{Get, Mutation, Put};
use basalt_model::{ColumnFamilyDescriptor, Error, Result, TableDescriptor, TableName};
use basalt_storage::env::{Env, MemoryStore, ObjectStore, SystemClock};
use bytes::Bytes;
use parking_lot::Mutex;

use super::*;
use crate::coordination::memory::{MemoryCoordinator, MemoryEnsemble};
use crate::coordination::{Coordinator, Election};
use crate::options::Options;

const ROOT: &str = "memory://cluster";
const STORAGE: &str = "memory:///";

/// The region servers of the process, by name.
#[derive(Debug, Default)]
pub(super) struct LocalServers(pub(super) Mutex<HashMap<String, Arc<ClusterRegionServer>>>);

impl ServerDirectory for LocalServers {
    fn connect(&self, name: &str) -> Result<Arc<dyn RegionServerAdmin>> {
        let s = self.0.lock().get(name).cloned();
        s.map(|s| s as Arc<dyn RegionServerAdmin>).ok_or_else(|| {
            Error::io(
                format!("reaching {name}"),
                std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "gone"),
            )
        })
    }
}

pub(super) struct Cluster {
    /// The objects, for tests to look at.
    pub(super) store: Arc<MemoryStore>,
    /// What the processes reach them through: the store itself, or a layer over it that
    /// injects faults.
    objects: Arc<dyn ObjectStore>,
    pub(super) ensemble: MemoryEnsemble,
    pub(super) servers: Arc<LocalServers>,
}

impl Cluster {
    pub(super) fn new() -> Cluster {
        let store = MemoryStore::new();
        Cluster::over(store.clone(), store)
    }

    /// A cluster whose processes reach `store` through `objects`.
    pub(super) fn over(store: Arc<MemoryStore>, objects: Arc<dyn ObjectStore>) -> Cluster {
        Cluster {
            store,
            objects,
            ensemble: MemoryEnsemble::new(),
            servers: Arc::default(),
        }
    }

    /// The storage as the processes see it.
    pub(super) fn env(&self) -> Env {
        Env::on_shared(
            Arc::new(SystemClock),
            self.objects.clone(),
            PathBuf::from(ROOT),
        )
    }

    /// A master process: elected if none is active.
    pub(super) fn master(&self, name: &str) -> (ClusterMaster, Arc<MemoryCoordinator>) {
        self.try_master(name).unwrap()
    }

    /// A master process, or why it could not take over.
    pub(super) fn try_master(&self, name: &str) -> Result<(ClusterMaster, Arc<MemoryCoordinator>)> {
        let coordinator = Arc::new(self.ensemble.connect());
        let Election::Active { epoch } = coordinator.elect(name)? else {
            panic!("{name} is not elected");
        };
        let m = ClusterMaster::take_over(
            Path::new(ROOT),
            STORAGE,
            &self.env(),
            coordinator.clone(),
            self.servers.clone(),
            name,
            epoch,
        )?;
        Ok((m, coordinator))
    }

    /// A region server process on `port`.
    pub(super) fn region_server(
        &self,
        port: u16,
    ) -> (Arc<ClusterRegionServer>, Arc<MemoryCoordinator>) {
        self.try_region_server(port).unwrap()
    }

    /// A region server process on `port`, or why it could not start.
    pub(super) fn try_region_server(
        &self,
        port: u16,
    ) -> Result<(Arc<ClusterRegionServer>, Arc<MemoryCoordinator>)> {
        let coordinator = Arc::new(self.ensemble.connect());
        let options = Options {
            env: self.env(),
            server_port: port,
            ..Options::default()
        };
        let rs =
            ClusterRegionServer::start(Path::new(ROOT), STORAGE, &options, coordinator.clone())?;
        let rs = Arc::new(rs);
        self.servers.0.lock().insert(rs.name(), rs.clone());
        Ok((rs, coordinator))
    }

    pub(super) fn server(&self, name: &str) -> Arc<ClusterRegionServer> {
        self.servers.0.lock().get(name).cloned().unwrap()
    }

    /// Writes a row where the master says its region is.
    pub(super) fn put(&self, m: &ClusterMaster, table: &TableName, row: &str, value: &str) {
        let (info, server) = m.locate(table, row.as_bytes()).unwrap();
        let region = self.server(&server.unwrap()).region(info.id).unwrap();
        let put = Put::new(row.to_owned()).add("f", "q", value);
        region.mutate(&Mutation::Put(put)).unwrap();
    }

    /// Reads a row's value where the master says its region is.
    pub(super) fn get(&self, m: &ClusterMaster, table: &TableName, row: &str) -> Option<Bytes> {
        let (info, server) = m.locate(table, row.as_bytes()).unwrap();
        let region = self.server(&server.unwrap()).region(info.id).unwrap();
        let r = region.get(Get::new(row.to_owned())).unwrap();
        r.value(b"f", b"q").map(bytes::Bytes::copy_from_slice)
    }

    /// Region servers on ports `first_port + 1 ..= first_port + n`.
    pub(super) fn region_servers(&self, first_port: u16, n: u16) -> Vec<Arc<ClusterRegionServer>> {
        (1..=n)
            .map(|i| self.region_server(first_port + i).0)
            .collect()
    }

    /// Writes `row0000`.. `row{n-1}` with values `v0`.. where the master says.
    pub(super) fn fill(&self, m: &ClusterMaster, table: &TableName, n: usize) {
        for i in 0..n {
            self.put(m, table, &format!("row{i:04}"), &format!("v{i}"));
        }
    }

    pub(super) fn assert_rows(&self, m: &ClusterMaster, table: &TableName, n: usize) {
        for i in 0..n {
            let row = format!("row{i:04}");
            let want = format!("v{i}");
            assert_eq!(
                self.get(m, table, &row).as_deref(),
                Some(want.as_bytes()),
                "{row}"
            );
        }
    }
}

/// A table of `n` regions: split keys row0010, row0020, ...
pub(super) fn create(m: &ClusterMaster, name: &str, n: usize) -> TableName {
    let t = TableName::parse(name).unwrap();
    let splits: Vec<Bytes> = (1..n)
        .map(|i| Bytes::from(format!("row{:04}", i * 10)))
        .collect();
    let desc = TableDescriptor::new(&t, vec![ColumnFamilyDescriptor::new("f".to_owned())]);
    m.create_table(desc, &splits).unwrap();
    t
}

/// Regions per server, from the catalog; every region must be assigned.
pub(super) fn counts(m: &ClusterMaster) -> BTreeMap<String, usize> {
    let c = m.catalog();
    let mut out = BTreeMap::new();
    for e in c.tables.values() {
        for r in &e.regions {
            let server = c.assignments[&r.id].server.clone().expect("assigned");
            *out.entry(server).or_default() += 1;
        }
    }
    out
}

/// Every region is open on the server the catalog names, at the epoch it names.
pub(super) fn assert_catalog_matches_servers(cluster: &Cluster, m: &ClusterMaster) {
    let c = m.catalog();
    for e in c.tables.values() {
        for r in &e.regions {
            let a = &c.assignments[&r.id];
            let report = cluster
                .server(a.server.as_ref().unwrap())
                .report(m.epoch())
                .unwrap();
            let here = report.regions.iter().find(|x| x.info.id == r.id);
            assert_eq!(
                here.map(|x| x.open_epoch),
                Some(a.open_epoch),
                "region {}",
                r.id
            );
        }
    }
}

#[test]
fn a_table_of_30_regions_spreads_over_three_servers_and_serves_every_row() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let _servers = cluster.region_servers(16020, 3);
    let t = create(&m, "t", 30);
    assert_eq!(
        counts(&m).values().copied().collect::<Vec<_>>(),
        [10, 10, 10]
    );
    assert_catalog_matches_servers(&cluster, &m);
    cluster.fill(&m, &t, 300);
    cluster.assert_rows(&m, &t, 300);
}

#[test]
fn the_balancer_evens_out_a_cluster_within_one_region_per_server() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let _first = cluster.region_server(16021);
    let t = create(&m, "t", 30);
    cluster.fill(&m, &t, 300);
    let _more = cluster.region_servers(16021, 3);
    assert_eq!(counts(&m).len(), 1, "new servers get nothing by themselves");
    assert!(m.set_balancer(false).unwrap(), "on by default");
    assert!(!m.balance().unwrap(), "switched off: it does not run");
    assert!(!m.set_balancer(true).unwrap());
    assert!(m.balance().unwrap());
    let c: Vec<usize> = counts(&m).values().copied().collect();
    assert_eq!(c.len(), 4);
    assert!(
        c.iter().max().unwrap() - c.iter().min().unwrap() <= 1,
        "{c:?}"
    );
    assert_catalog_matches_servers(&cluster, &m);
    cluster.assert_rows(&m, &t, 300);
}

#[test]
fn moves_keep_every_row_and_only_raise_open_epochs() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let servers = cluster.region_servers(16020, 3);
    let t = create(&m, "t", 6);
    cluster.fill(&m, &t, 60);
    let ids: Vec<u64> = m
        .catalog()
        .tables
        .values()
        .flat_map(|e| e.regions.iter().map(|r| r.id))
        .collect();
    for round in 0..30 {
        let id = ids[round % ids.len()];
        let before = m.catalog().assignments[&id].clone();
        // The server after the one holding it.
        let at = servers
            .iter()
            .position(|s| before.server.as_deref() == Some(s.name().as_str()))
            .unwrap();
        let dest = servers[(at + 1) % servers.len()].name();
        m.move_region(id, Some(&dest)).unwrap();
        let a = m.catalog().assignments[&id].clone();
        assert_eq!(a.server.as_deref(), Some(dest.as_str()));
        assert_eq!(
            a.open_epoch,
            before.open_epoch + 1,
            "a move raises the epoch"
        );
        cluster.assert_rows(&m, &t, 60);
    }
    // A move to where the region is changes nothing.
    let here = m.catalog().assignments[&ids[0]].clone();
    m.move_region(ids[0], here.server.as_deref()).unwrap();
    assert_eq!(m.catalog().assignments[&ids[0]], here);
    assert_catalog_matches_servers(&cluster, &m);
    let e = m.move_region(ids[0], Some("nowhere,1,1")).unwrap_err();
    assert!(e.to_string().contains("not a live region server"), "{e}");
    // An open at an epoch the server has seen is refused as stale.
    let a = m.catalog().assignments[&ids[0]].clone();
    let (desc, info) = {
        let c = m.catalog();
        let e = c.tables.values().next().unwrap().clone();
        let info = e.regions.iter().find(|r| r.id == ids[0]).unwrap().clone();
        (e.descriptor, info)
    };
    let holder = cluster.server(a.server.as_ref().unwrap());
    let e = holder
        .open_region(m.epoch(), &desc, &info, a.open_epoch)
        .unwrap_err();
    assert!(e.to_string().contains("stale"), "{e}");
}

#[test]
fn unassign_and_assign_take_a_region_offline_and_back() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let _s = cluster.region_server(16021);
    let t = create(&m, "t", 2);
    cluster.put(&m, &t, "row0001", "v1");
    let (info, server) = m.locate(&t, b"row0001").unwrap();
    m.unassign(info.id).unwrap();
    assert_eq!(m.locate(&t, b"row0001").unwrap().1, None);
    assert!(cluster
        .server(server.as_ref().unwrap())
        .region(info.id)
        .is_err());
    m.assign(info.id).unwrap();
    assert_eq!(cluster.get(&m, &t, "row0001").as_deref(), Some(&b"v1"[..]));
}

#[test]
fn decommission_moves_regions_off_and_recommission_takes_the_server_back() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let servers: Vec<String> = (1..=3)
        .map(|i| cluster.region_server(16020 + i).0.name())
        .collect();
    let t = create(&m, "t", 9);
    cluster.fill(&m, &t, 90);
    m.decommission(&servers[..1], true).unwrap();
    assert_eq!(m.decommissioned(), servers[..1]);
    let c = counts(&m);
    assert!(!c.contains_key(&servers[0]), "{c:?}");
    assert!(cluster
        .server(&servers[0])
        .report(m.epoch())
        .unwrap()
        .regions
        .is_empty());
    cluster.assert_rows(&m, &t, 90);
    m.balance().unwrap();
    assert!(
        !counts(&m).contains_key(&servers[0]),
        "the balancer leaves it alone"
    );
    let e = m.decommission(&servers[1..], true).unwrap_err();
    assert!(e.to_string().contains("leave none"), "{e}");
    m.recommission(&servers[0]).unwrap();
    assert!(m.decommissioned().is_empty());
    m.balance().unwrap();
    assert_eq!(counts(&m).values().copied().collect::<Vec<_>>(), [3, 3, 3]);
    cluster.assert_rows(&m, &t, 90);
}

#[test]
fn a_whole_cluster_stop_and_start_keeps_every_row_with_nothing_to_replay() {
    let cluster = Cluster::new();
    let (m, mc) = cluster.master("m1,16000,1");
    let servers = cluster.region_servers(16020, 3);
    let t = create(&m, "t", 12);
    cluster.fill(&m, &t, 120);
    for s in &servers {
        s.stop().unwrap();
    }
    m.stop().unwrap();
    drop((m, mc, servers));
    cluster.servers.0.lock().clear();
    // Every old log holds nothing: a clean stop flushed every region first.
    let env = cluster.env();
    for dir in crate::regionserver::log_dirs(&env, &Path::new(ROOT).join("wal")).unwrap() {
        let segments = crate::regionserver::log_segments(&env, &dir).unwrap();
        let mut edits = 0;
        basalt_storage::wal::replay::replay_paths(&env, &segments, |_| {
            edits += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(edits, 0, "{}", dir.display());
    }
    let (m, _mc) = cluster.master("m2,16000,2");
    let _servers = cluster.region_servers(16030, 3);
    m.assign_all().unwrap();
    assert_eq!(counts(&m).values().copied().collect::<Vec<_>>(), [4, 4, 4]);
    cluster.assert_rows(&m, &t, 120);
}

#[test]
fn a_backup_master_takes_over_and_the_deposed_one_cannot_commit() {
    let cluster = Cluster::new();
    let (old, old_session) = cluster.master("m1,16000,1");
    let _s = cluster.region_server(16021);
    let t = create(&old, "t", 3);
    cluster.put(&old, &t, "row0001", "v1");
    let backup = Arc::new(cluster.ensemble.connect());
    let Election::Backup { watch, .. } = backup.elect("m2,16000,2").unwrap() else {
        panic!("m1 is active");
    };
    // The active master's session expires (a long pause): the backup is told and takes over.
    cluster.ensemble.expire(&old_session);
    assert!(watch.fired());
    let Election::Active { epoch } = backup.elect("m2,16000,2").unwrap() else {
        panic!("the backup takes over");
    };
    let new = ClusterMaster::take_over(
        Path::new(ROOT),
        STORAGE,
        &cluster.env(),
        backup.clone(),
        cluster.servers.clone(),
        "m2,16000,2",
        epoch,
    )
    .unwrap();
    assert!(new.epoch() > old.epoch());
    // The deposed master wakes up and tries to change the catalog: it is fenced.
    let desc = TableDescriptor::new(
        &TableName::parse("other").unwrap(),
        vec![ColumnFamilyDescriptor::new("f".to_owned())],
    );
    let e = old.create_table(desc, &[]).unwrap_err();
    assert!(e.to_string().contains("deposed"), "{e}");
    assert!(!new.catalog().tables.contains_key("default:other"));
    // The new master serves the same assignments.
    assert_eq!(
        cluster.get(&new, &t, "row0001").as_deref(),
        Some(&b"v1"[..])
    );
}

#[test]
fn a_region_server_of_another_cluster_or_storage_is_refused() {
    let cluster = Cluster::new();
    let (_m, _mc) = cluster.master("m1,16000,1");
    let options = Options {
        env: cluster.env(),
        ..Options::default()
    };
    let c: Arc<dyn Coordinator> = Arc::new(cluster.ensemble.connect());
    let e = ClusterRegionServer::start(Path::new(ROOT), "s3://elsewhere/x", &options, c.clone())
        .unwrap_err();
    assert!(e.to_string().contains("the cluster's is memory:///"), "{e}");
    // Same URL, other files: another cluster's catalog.
    let other = Cluster::new();
    let (_om, _omc) = other.master("m9,16000,9");
    let options = Options {
        env: other.env(),
        ..Options::default()
    };
    let e = ClusterRegionServer::start(Path::new(ROOT), STORAGE, &options, c).unwrap_err();
    assert!(e.to_string().contains("belongs to cluster"), "{e}");
    // No master yet: nothing to join.
    let fresh = Cluster::new();
    let c: Arc<dyn Coordinator> = Arc::new(fresh.ensemble.connect());
    let e = ClusterRegionServer::start(Path::new(ROOT), STORAGE, &options, c).unwrap_err();
    assert!(e.to_string().contains("start a master first"), "{e}");
}

#[test]
fn a_region_server_whose_session_expired_opens_nothing() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let (rs, session) = cluster.region_server(16021);
    let (_other, _os) = cluster.region_server(16022);
    cluster.ensemble.expire(&session);
    // The master sees it gone and assigns only to the live server.
    let t = create(&m, "t", 4);
    assert_eq!(
        counts(&m).keys().cloned().collect::<Vec<_>>(),
        [_other.name()]
    );
    let (desc, info) = {
        let c = m.catalog();
        let e = c.tables.values().next().unwrap().clone();
        (e.descriptor.clone(), e.regions[0].clone())
    };
    let e = rs.open_region(m.epoch(), &desc, &info, 99).unwrap_err();
    assert!(
        e.to_string().contains("lost its coordination session"),
        "{e}"
    );
    let _ = t;
}

#[test]
fn disable_enable_alter_and_drop_act_on_every_server() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let servers = cluster.region_servers(16020, 3);
    let t = create(&m, "t", 6);
    cluster.fill(&m, &t, 60);
    m.disable_table(&t).unwrap();
    assert!(matches!(
        m.locate(&t, b"row0001"),
        Err(Error::TableNotEnabled(_))
    ));
    for s in &servers {
        assert!(
            s.report(m.epoch()).unwrap().regions.is_empty(),
            "every region closed"
        );
    }
    assert!(matches!(
        m.disable_table(&t),
        Err(Error::TableNotEnabled(_))
    ));
    m.enable_table(&t).unwrap();
    assert_catalog_matches_servers(&cluster, &m);
    cluster.assert_rows(&m, &t, 60);
    // Alter: a new family; every region reopens at a higher epoch and takes it.
    let before = m.catalog().assignments.clone();
    let mut desc = m.catalog().table(&t).unwrap().descriptor.clone();
    desc.families.insert(
        Bytes::from_static(b"g"),
        ColumnFamilyDescriptor::new("g".to_owned()),
    );
    m.modify_table(desc).unwrap();
    let after = m.catalog().assignments.clone();
    for (id, a) in &after {
        assert!(a.open_epoch > before[id].open_epoch, "region {id} reopened");
    }
    let (info, server) = m.locate(&t, b"row0005").unwrap();
    let region = cluster.server(&server.unwrap()).region(info.id).unwrap();
    let put = Put::new("row0005").add("g", "q", "new family");
    region.mutate(&Mutation::Put(put)).unwrap();
    cluster.assert_rows(&m, &t, 60);
    // Drop: only when disabled; then the files go to the archive.
    assert!(matches!(
        m.delete_table(&t),
        Err(Error::TableNotDisabled(_))
    ));
    m.disable_table(&t).unwrap();
    m.delete_table(&t).unwrap();
    assert!(matches!(m.locate(&t, b"x"), Err(Error::TableNotFound(_))));
    assert!(m.catalog().assignments.is_empty());
    let keys = cluster.store.list_all("").unwrap();
    assert!(
        !keys.iter().any(|k| k.starts_with("data/default/t/")),
        "{keys:?}"
    );
    assert!(keys
        .iter()
        .any(|k| k.starts_with("archive/") && k.contains("/data/default/t/")));
    // The archive keeps them until its retention passes.
    assert_eq!(m.clean_archive(60_000).unwrap(), 0);
    assert_eq!(m.clean_archive(-1).unwrap(), 1);
    let keys = cluster.store.list_all("archive/").unwrap();
    assert!(keys.is_empty(), "{keys:?}");
}

#[test]
fn namespaces_are_created_and_dropped_in_the_catalog() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    m.create_namespace("ns", BTreeMap::new()).unwrap();
    assert!(m.catalog().namespaces.contains_key("ns"));
    m.drop_namespace("ns").unwrap();
    assert!(!m.catalog().namespaces.contains_key("ns"));
    assert!(m.drop_namespace("hbase").is_err());
}

#[test]
fn a_region_server_serves_reads_and_writes_of_its_own_regions_only() {
    use basalt_api::Connection as _;
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let (rs, session) = cluster.region_server(16021);
    let t = create(&m, "t", 4); // row0000.. | row0010.. | row0020.. | row0030..
    let conn = RegionServerConnection::new(rs.clone());
    let table = conn.table(&t).unwrap();
    for i in 0..40 {
        let put = Put::new(format!("row{i:04}")).add("f", "q", format!("v{i}"));
        table.put(put).unwrap();
    }
    // All four regions are here: a scan crosses them.
    let rows = table.scan(basalt_model::ops::Scan::new()).unwrap();
    assert_eq!(rows.count(), 40);
    // One region moves to another server: its rows are not served here any more.
    let (_other, _os) = cluster.region_server(16022);
    let (info, _) = m.locate(&t, b"row0015").unwrap();
    m.move_region(info.id, None).unwrap();
    let e = table.get(Get::new("row0015")).unwrap_err();
    assert!(matches!(e, Error::NotServingRegion(_)), "{e}");
    let loc = conn.locate_region(&t, b"row0025").unwrap();
    assert_eq!(loc.server, rs.name());
    assert!(conn.locate_region(&t, b"row0015").is_err());
    let results = table.batch(vec![
        Mutation::Put(Put::new("row0001").add("f", "q", "x")),
        Mutation::Put(Put::new("row0011").add("f", "q", "x")),
    ]);
    assert!(results[0].is_ok());
    assert!(
        matches!(results[1], Err(Error::NotServingRegion(_))),
        "{results:?}"
    );
    // A scan from a hosted region stops with NotServingRegion where the next one is not here.
    let mut scan = table.scan(basalt_model::ops::Scan::new()).unwrap();
    let mut seen = 0;
    let end = loop {
        match scan.next_row() {
            Ok(Some(_)) => seen += 1,
            other => break other,
        }
    };
    assert_eq!(seen, 10);
    assert!(matches!(end, Err(Error::NotServingRegion(_))), "{end:?}");
    // Administration is the master's.
    let e = conn.admin().list_tables(None).unwrap_err();
    assert!(e.to_string().contains("served by the master"), "{e}");
    // Without a lease, nothing is served.
    cluster.ensemble.disconnect(
        &session,
        std::time::Instant::now() - std::time::Duration::from_secs(60),
    );
    let e = table.get(Get::new("row0001")).unwrap_err();
    assert!(
        e.to_string().contains("lost its coordination session"),
        "{e}"
    );
}

/// `hbase:meta` on a cluster: the master serves it, a row per region naming the server the
/// catalog assigned it to, following moves and unassigns; it cannot be written.
#[test]
fn hbase_meta_shows_each_region_on_its_assigned_server() {
    use basalt_api::Connection as _;
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let servers = cluster.region_servers(16020, 2);
    let t = create(&m, "t", 4);
    let m = Arc::new(m);
    let conn = MasterConnection::new(Arc::clone(&m)).unwrap();
    let meta = TableName::parse("hbase:meta").unwrap();
    let cell = |region: &basalt_storage::region::RegionInfo, q: &str| {
        let got = conn.table(&meta).unwrap();
        let r = got.get(Get::new(region.region_name(&t))).unwrap();
        r.value(b"info", q.as_bytes())
            .map(bytes::Bytes::copy_from_slice)
    };
    let regions = m.catalog().table(&t).unwrap().regions.clone();
    let rows = conn
        .table(&meta)
        .unwrap()
        .scan(basalt_model::ops::Scan::new())
        .unwrap()
        .collect::<Result<Vec<_>>>()
        .unwrap();
    assert_eq!(
        rows.len(),
        1 + regions.len(),
        "the table's row and one per region"
    );
    for r in &regions {
        let server = m.catalog().assignments[&r.id].server.clone().unwrap();
        assert_eq!(cell(r, "sn").as_deref(), Some(server.as_bytes()));
        assert_eq!(cell(r, "state").as_deref(), Some(&b"OPEN"[..]));
        let parts: Vec<&str> = server.split(',').collect();
        let want = format!("{}:{}", parts[0], parts[1]);
        assert_eq!(cell(r, "server").as_deref(), Some(want.as_bytes()));
    }

    // A move shows at once; an unassigned region is CLOSED, on no server.
    let r = &regions[0];
    let from = m.catalog().assignments[&r.id].server.clone().unwrap();
    let to = servers
        .iter()
        .map(|s| s.name())
        .find(|s| *s != from)
        .unwrap();
    m.move_region(r.id, Some(&to)).unwrap();
    assert_eq!(cell(r, "sn").as_deref(), Some(to.as_bytes()));
    m.unassign(r.id).unwrap();
    assert_eq!(cell(r, "state").as_deref(), Some(&b"CLOSED"[..]));
    assert_eq!(cell(r, "sn"), None);

    // The master is its location, and nobody writes it.
    let at = conn.locate_region(&meta, b"t,,").unwrap();
    assert_eq!(at.server, "m1,16000,1");
    let put = Put::new("x").add("info", "state", "OPEN");
    let refused = conn.table(&meta).unwrap().put(put).unwrap_err();
    assert!(!refused.is_retryable(), "{refused}");
}

/// A backup master answers region lookups and schema reads from the latest catalog on
/// storage, and refuses changes, naming the active master.
#[test]
fn a_backup_master_answers_lookups_from_the_catalog_on_storage() {
    use basalt_api::Admin;
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let servers = cluster.region_servers(16020, 2);
    let t = create(&m, "t", 4);
    let backup = NotMaster::backup_master(
        Arc::new(cluster.ensemble.connect()),
        "m2,16000,2".to_owned(),
        cluster.env(),
        Path::new(ROOT),
    );
    let catalog = m.catalog();
    let want: Vec<(u64, String)> = catalog
        .table(&t)
        .unwrap()
        .regions
        .iter()
        .map(|r| (r.id, catalog.assignments[&r.id].server.clone().unwrap()))
        .collect();
    let seen = |b: &NotMaster| -> Vec<(u64, String)> {
        b.region_reports(&t)
            .unwrap()
            .into_iter()
            .map(|r| (r.region.id, r.server))
            .collect()
    };
    assert_eq!(seen(&backup), want);
    assert_eq!(backup.list_tables(None).unwrap(), ["t"]);
    assert_eq!(
        backup.describe(&t).unwrap(),
        catalog.table(&t).unwrap().descriptor
    );
    let (info, server) = m.locate(&t, b"row0015").unwrap();
    let at = backup.locate_region(&t, b"row0015").unwrap();
    assert_eq!((at.region, Some(at.server)), (info.clone(), server.clone()));

    // A move shows at once: the catalog on storage is the truth.
    let to = servers
        .iter()
        .map(|s| s.name())
        .find(|s| Some(s) != server.as_ref())
        .unwrap();
    m.move_region(info.id, Some(&to)).unwrap();
    assert_eq!(backup.locate_region(&t, b"row0015").unwrap().server, to);
    let e = backup.create_namespace("ns", BTreeMap::new()).unwrap_err();
    assert!(
        matches!(&e, Error::PleaseHold(m) if m.contains("m1,16000,1")),
        "{e}"
    );
}
