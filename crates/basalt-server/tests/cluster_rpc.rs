//! The master drives region servers over real gRPC sockets (`basalt.v1.RegionServerAdmin`):
//! assignment, moves, reports with loads, a deposed master refused, an unreachable server.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use basalt_api::leases::Scanners;
use basalt_model::ops::{Get, Mutation, Put};
use basalt_model::{ColumnFamilyDescriptor, Error, TableDescriptor, TableName};
use basalt_node::cluster::{
    ClusterMaster, ClusterRegionServer, RegionServerConnection, ServerDirectory,
};
use basalt_node::coordination::memory::MemoryEnsemble;
use basalt_node::coordination::{Coordinator, Election};
use basalt_node::env::{Env, MemoryStore, SystemClock};
use basalt_node::Options;
use basalt_proto::convert::{get_to_pb, mutation_to_pb, result_from_pb};
use basalt_proto::pb;
use basalt_proto::status::from_status;
use basalt_server::cluster::{GrpcServerDirectory, RegionServerAdminService};
use basalt_server::grpc::{self, Services};
use basalt_server::metrics::RequestMetrics;
use basalt_testkit::services::free_port;
use bytes::Bytes;

const ROOT: &str = "memory://rpc";
const STORAGE: &str = "memory:///";

struct Fixture {
    store: Arc<MemoryStore>,
    ensemble: MemoryEnsemble,
    runtime: tokio::runtime::Runtime,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            store: MemoryStore::new(),
            ensemble: MemoryEnsemble::new(),
            runtime: tokio::runtime::Runtime::new().unwrap(),
        }
    }

    fn env(&self) -> Env {
        Env::on_shared(
            Arc::new(SystemClock),
            self.store.clone(),
            PathBuf::from(ROOT),
        )
    }

    fn master(&self, name: &str) -> ClusterMaster {
        let c: Arc<dyn Coordinator> = Arc::new(self.ensemble.connect());
        let Election::Active { epoch } = c.elect(name).unwrap() else {
            panic!("{name} is not elected");
        };
        let directory = Arc::new(GrpcServerDirectory::new().unwrap());
        ClusterMaster::take_over(
            Path::new(ROOT),
            STORAGE,
            &self.env(),
            c,
            directory,
            name,
            epoch,
        )
        .unwrap()
    }

    /// A region server listening on a free loopback port, named after it.
    fn region_server(&self) -> Arc<ClusterRegionServer> {
        let port = free_port();
        let options = Options {
            env: self.env(),
            server_host: "127.0.0.1".to_owned(),
            server_port: port,
            ..Options::default()
        };
        let c: Arc<dyn Coordinator> = Arc::new(self.ensemble.connect());
        let rs =
            Arc::new(ClusterRegionServer::start(Path::new(ROOT), STORAGE, &options, c).unwrap());
        let svc = RegionServerAdminService::new(rs.clone()).into_server();
        let data = Services {
            conn: Arc::new(RegionServerConnection::new(rs.clone())),
            node: None,
            hosted: Some(rs.clone()),
            scanners: Arc::new(Scanners::new(Duration::from_secs(60))),
            metrics: Arc::new(RequestMetrics::new(&[("native", &grpc::OPS)])),
            region_names: Arc::default(),
            mini_batches: Arc::default(),
        };
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        self.runtime.spawn(
            tonic::transport::Server::builder()
                .add_service(svc)
                .add_service(pb::table_server::TableServer::new(data))
                .serve(addr),
        );
        // Serving once a report comes back over the socket.
        let directory = GrpcServerDirectory::new().unwrap();
        let remote = directory.connect(&rs.name()).unwrap();
        let start = std::time::Instant::now();
        while remote.report(0).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{} does not answer",
                rs.name()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        rs
    }
}

fn create(m: &ClusterMaster, regions: usize) -> TableName {
    let t = TableName::parse("t").unwrap();
    let splits: Vec<Bytes> = (1..regions)
        .map(|i| Bytes::from(format!("row{i}")))
        .collect();
    let desc = TableDescriptor::new(&t, vec![ColumnFamilyDescriptor::new("f".to_owned())]);
    m.create_table(desc, &splits).unwrap();
    t
}

#[test]
fn the_master_assigns_moves_and_reads_reports_over_grpc() {
    let fx = Fixture::new();
    let m = fx.master("m1,16000,1");
    let servers = [fx.region_server(), fx.region_server()];
    let t = create(&m, 6);
    let directory = GrpcServerDirectory::new().unwrap();
    let reports: Vec<_> = servers
        .iter()
        .map(|s| {
            directory
                .connect(&s.name())
                .unwrap()
                .report(m.epoch())
                .unwrap()
        })
        .collect();
    assert_eq!(
        reports.iter().map(|r| r.regions.len()).collect::<Vec<_>>(),
        [3, 3]
    );
    for r in &reports {
        for x in &r.regions {
            let a = &m.catalog().assignments[&x.info.id];
            assert_eq!(a.server.as_deref(), Some(r.server.as_str()));
            assert_eq!(a.open_epoch, x.open_epoch);
            assert_eq!(x.table, t);
        }
    }
    // A row written where the master says is there after its region moves over the wire.
    let (info, server) = m.locate(&t, b"row3x").unwrap();
    let holder = servers.iter().find(|s| Some(s.name()) == server).unwrap();
    let put = Put::new("row3x").add("f", "q", "v");
    holder
        .region(info.id)
        .unwrap()
        .mutate(&Mutation::Put(put))
        .unwrap();
    m.move_region(info.id, None).unwrap();
    let (_, now) = m.locate(&t, b"row3x").unwrap();
    assert_ne!(now, server);
    let other = servers.iter().find(|s| Some(s.name()) == now).unwrap();
    let got = other
        .region(info.id)
        .unwrap()
        .get(Get::new("row3x"))
        .unwrap();
    assert_eq!(
        got.value(b"f", b"q").map(<[u8]>::to_vec),
        Some(b"v".to_vec())
    );
    // The region server's refusals arrive as the same errors.
    let remote = directory.connect(&servers[0].name()).unwrap();
    let e = remote.report(m.epoch() - 1).unwrap_err();
    assert!(
        matches!(e, Error::DoNotRetry(ref msg) if msg.contains("stale")),
        "{e}"
    );
}

#[test]
fn an_unreachable_server_leaves_its_regions_unassigned() {
    let fx = Fixture::new();
    let m = fx.master("m1,16000,1");
    // Registered, but nothing listens on its port.
    let c: Arc<dyn Coordinator> = Arc::new(fx.ensemble.connect());
    let options = Options {
        env: fx.env(),
        server_host: "127.0.0.1".to_owned(),
        server_port: free_port(),
        ..Options::default()
    };
    let _silent = ClusterRegionServer::start(Path::new(ROOT), STORAGE, &options, c).unwrap();
    create(&m, 2);
    let c = m.catalog();
    assert!(
        c.assignments.values().all(|a| a.server.is_none()),
        "{:?}",
        c.assignments
    );
}

#[test]
fn a_region_server_serves_its_rows_over_grpc_and_refuses_others() {
    let fx = Fixture::new();
    let m = fx.master("m1,16000,1");
    let servers = [fx.region_server(), fx.region_server()];
    let t = create(&m, 2); // [, row1) and [row1, )
    let (here, server) = m.locate(&t, b"row0").unwrap();
    let holder = servers.iter().find(|s| Some(s.name()) == server).unwrap();
    let port = holder.name().split(',').nth(1).unwrap().to_owned();
    let client = fx.runtime.block_on(async {
        pb::table_client::TableClient::connect(format!("http://127.0.0.1:{port}"))
            .await
            .unwrap()
    });
    let mutate = |row: &str| {
        let mut c = client.clone();
        let m = Mutation::Put(Put::new(row.to_owned()).add("f", "q", "v"));
        let req = pb::MutateRequest {
            table: t.to_string(),
            mutation: Some(mutation_to_pb(&m)),
            region: None,
        };
        fx.runtime
            .block_on(async move { c.mutate(req).await })
            .map_err(|s| from_status(&s))
    };
    mutate("row0").unwrap();
    let mut c = client.clone();
    let req = pb::GetRequest {
        table: t.to_string(),
        get: Some(get_to_pb(&Get::new("row0"))),
        region: Some(here.encoded_name(&t)),
    };
    let got = fx
        .runtime
        .block_on(async move { c.get(req).await })
        .unwrap();
    let got = result_from_pb(got.into_inner()).unwrap();
    assert_eq!(
        got.value(b"f", b"q").map(<[u8]>::to_vec),
        Some(b"v".to_vec())
    );
    // The other region's row: refused, so a client asks the master where it is.
    let (_, elsewhere) = m.locate(&t, b"row1").unwrap();
    assert_ne!(elsewhere, server, "two regions over two servers: one each");
    let e = mutate("row1").unwrap_err();
    assert!(matches!(e, Error::NotServingRegion(_)), "{e}");
}
