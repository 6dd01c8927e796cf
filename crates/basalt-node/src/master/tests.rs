//! The master over a region server it reaches only through `RegionServerServices`: here one
//! whose region closes can be held, as a close waiting for a long compaction is.

use std::path::Path;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use basalt_model::{ColumnFamilyDescriptor, Result, TableDescriptor, TableName};
use basalt_storage::region::{Region, RegionInfo};
use parking_lot::Mutex;

use super::Master;
use crate::catalog::Catalog;
use crate::options::Options;
use crate::regionserver::{MasterQueue, RegionServer, RegionServerServices, ServerName};

/// A region server whose closes of table `a`'s regions wait until the test lets them go.
#[derive(Debug)]
struct HeldCloses {
    inner: RegionServer,
    /// Told when a close begins to wait.
    waiting: Mutex<Sender<()>>,
    /// Each message lets one close go on.
    release: Mutex<Receiver<()>>,
}

impl RegionServerServices for HeldCloses {
    fn server_name(&self) -> &ServerName {
        self.inner.server_name()
    }
    fn open_region(
        &self,
        dir: &Path,
        info: &RegionInfo,
        table: &Arc<TableDescriptor>,
    ) -> Result<Arc<Region>> {
        self.inner.open_region(dir, info, table)
    }
    fn open_unmanaged(
        &self,
        dir: &Path,
        info: &RegionInfo,
        table: &Arc<TableDescriptor>,
    ) -> Result<Region> {
        self.inner.open_unmanaged(dir, info, table)
    }
    fn close_region(&self, region: &Arc<Region>) -> Result<()> {
        if region.table().table_name().qualifier() == "a" {
            self.waiting.lock().send(()).unwrap();
            self.release.lock().recv().unwrap();
        }
        self.inner.close_region(region)
    }
    fn reopen_region(&self, region: &Arc<Region>) {
        self.inner.reopen_region(region);
    }
    fn flush_region(&self, region: &Region) -> Result<()> {
        self.inner.flush_region(region)
    }
    fn request_compaction(&self, region: &Region) {
        self.inner.request_compaction(region);
    }
    fn retire_wal(&self) -> Result<()> {
        self.inner.retire_wal()
    }
}

fn table(name: &str) -> TableDescriptor {
    let name = TableName::parse(name).unwrap();
    TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")])
}

/// Runs `f` on its own thread and returns its result, failing the test if it takes longer
/// than `limit` (a DDL stuck behind a lock would hang the test instead).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = channel();
    std::thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(limit)
        .expect("the operation was held up by another table's split")
}

#[test]
fn a_split_waiting_on_its_region_holds_up_no_other_tables_ddl() {
    let root = tempfile::tempdir().unwrap();
    let options = Options::default();
    let (queue, _inbox) = MasterQueue::new();
    let inner = RegionServer::start(root.path(), &options, queue).unwrap();
    let archive = Arc::clone(inner.archive());
    let (waiting_tx, waiting) = channel();
    let (release, release_rx) = channel();
    let rs = Arc::new(HeldCloses {
        inner,
        waiting: Mutex::new(waiting_tx),
        release: Mutex::new(release_rx),
    });
    let catalog = Catalog::load(&options.env, &root.path().join("catalog")).unwrap();
    let catalog = (catalog.0, catalog.1.unwrap_or_default());
    let master = Arc::new(Master::new(
        root.path(),
        &options.env,
        Arc::clone(&rs) as _,
        archive,
        options.archive_retention_ms,
        catalog,
    ));
    master.assign_all().unwrap();
    rs.inner.recover(false).unwrap();
    master.finish_start(true).unwrap();
    master.create_table(table("a"), &[]).unwrap();

    let splitter = {
        let master = Arc::clone(&master);
        std::thread::spawn(move || {
            let a = TableName::parse("a").unwrap();
            master.split_table(&a, Some(b"m"))
        })
    };
    // The split is closing its region, held as by a long compaction.
    waiting.recv().unwrap();
    let limit = Duration::from_secs(30);
    let m = Arc::clone(&master);
    within(limit, move || m.create_table(table("b"), &[])).unwrap();
    let m = Arc::clone(&master);
    within(limit, move || {
        m.disable_table(&TableName::parse("b").unwrap())
    })
    .unwrap();
    // The table map and the catalog answer meanwhile.
    assert_eq!(master.list_tables(None).unwrap(), ["a", "b"]);
    assert!(
        !splitter.is_finished(),
        "the split went on without its close"
    );

    release.send(()).unwrap();
    splitter.join().unwrap().unwrap();
    let a = TableName::parse("a").unwrap();
    assert_eq!(master.regions(&a).unwrap().len(), 2, "the split completed");
}
