//! Coordination: one behaviour, two implementations. The same checks run on a real ZooKeeper
//! server and on the in-memory ensemble the deterministic tests use; a process that goes away
//! (its coordinator dropped) loses its ephemeral nodes on both.

use std::time::{Duration, Instant};

use basalt_model::Error;
use basalt_node::coordination::memory::MemoryEnsemble;
use basalt_node::coordination::{
    ClusterInfo, Coordinator, Election, SessionHealth, ZooKeeperCoordinator,
};
use basalt_testkit::services::ZooKeeper;

/// Long enough for any change on loopback to arrive; a watch that fires is seen at once.
const PATIENCE: Duration = Duration::from_secs(20);

fn conformance(connect: &dyn Fn() -> Box<dyn Coordinator>) {
    cluster_is_published_once(connect);
    one_master_at_a_time(connect);
    region_servers_come_and_go(connect);
}

fn cluster_is_published_once(connect: &dyn Fn() -> Box<dyn Coordinator>) {
    let (a, b) = (connect(), connect());
    assert_eq!(a.cluster().unwrap(), None);
    let first = ClusterInfo {
        cluster_id: "c1".into(),
        storage: "file:///x".into(),
    };
    let second = ClusterInfo {
        cluster_id: "c2".into(),
        storage: "s3://y".into(),
    };
    assert_eq!(a.publish_cluster(&first).unwrap(), first);
    assert_eq!(
        b.publish_cluster(&second).unwrap(),
        first,
        "the first stays"
    );
    assert_eq!(b.cluster().unwrap(), Some(first));
}

fn one_master_at_a_time(connect: &dyn Fn() -> Box<dyn Coordinator>) {
    let (a, b, c) = (connect(), connect(), connect());
    let Election::Active { epoch: e1 } = a.elect("m1,16000,1").unwrap() else {
        panic!("the first master is active");
    };
    let Election::Backup { active, watch } = b.elect("m2,16000,2").unwrap() else {
        panic!("the second is a backup");
    };
    assert_eq!(active, "m1,16000,1");
    assert_eq!(c.active_master().unwrap().as_deref(), Some("m1,16000,1"));
    assert_eq!(c.backup_masters().unwrap(), ["m2,16000,2"]);
    assert!(!watch.fired());
    // A clean stop: the backup hears of it and takes over with a higher epoch.
    a.resign("m1,16000,1").unwrap();
    assert!(watch.wait(PATIENCE), "the backup is told");
    let Election::Active { epoch: e2 } = b.elect("m2,16000,2").unwrap() else {
        panic!("the backup takes over");
    };
    assert!(e2 > e1, "epochs only grow: {e1} then {e2}");
    assert!(c.backup_masters().unwrap().is_empty());
    // The active master's process dies: its session ends, and a backup takes over.
    let Election::Backup { watch, .. } = a.elect("m1,16000,3").unwrap() else {
        panic!("a is now the backup");
    };
    drop(b);
    assert!(watch.wait(PATIENCE), "the backup is told of the death");
    let Election::Active { epoch: e3 } = a.elect("m1,16000,3").unwrap() else {
        panic!("a takes over");
    };
    assert!(e3 > e2);
    a.resign("m1,16000,3").unwrap();
}

fn region_servers_come_and_go(connect: &dyn Fn() -> Box<dyn Coordinator>) {
    let (s1, s2, observer) = (connect(), connect(), connect());
    s1.register_server("h1,16020,1").unwrap();
    s2.register_server("h2,16020,1").unwrap();
    let e = s2.register_server("h1,16020,1").unwrap_err();
    assert!(
        matches!(e, Error::DoNotRetry(ref m) if m.contains("registered already")),
        "{e}"
    );
    let (live, watch) = observer.live_servers().unwrap();
    assert_eq!(live, ["h1,16020,1", "h2,16020,1"]);
    drop(s1); // the process dies
    assert!(watch.wait(PATIENCE));
    let (live, watch) = observer.live_servers().unwrap();
    assert_eq!(live, ["h2,16020,1"]);
    s2.deregister_server("h2,16020,1").unwrap(); // a clean stop
    assert!(watch.wait(PATIENCE));
    assert!(observer.live_servers().unwrap().0.is_empty());
    assert!(observer
        .session()
        .lease_valid(observer.session_timeout(), Instant::now()));
}

#[test]
fn the_in_memory_ensemble_keeps_zookeepers_rules() {
    let ensemble = MemoryEnsemble::new();
    conformance(&|| Box::new(ensemble.connect()));
}

#[test]
fn zookeeper_keeps_the_rules() {
    let zk = ZooKeeper::start();
    let address = zk.address.clone();
    conformance(&|| {
        Box::new(
            ZooKeeperCoordinator::connect(&address, "/basalt", Duration::from_secs(4)).unwrap(),
        )
    });
}

#[test]
fn a_session_cut_off_from_zookeeper_loses_its_lease_before_it_can_expire() {
    let mut zk = ZooKeeper::start();
    let timeout = Duration::from_secs(3);
    let c = ZooKeeperCoordinator::connect(&zk.address, "/basalt", timeout).unwrap();
    c.register_server("h1,16020,1").unwrap();
    // The heartbeat keeps the lease fresh well past its first two thirds.
    let fresh_until = Instant::now() + c.session_timeout();
    while Instant::now() < fresh_until {
        assert!(c.session().lease_valid(c.session_timeout(), Instant::now()));
        std::thread::sleep(Duration::from_millis(100));
    }
    let killed = Instant::now();
    zk.kill();
    // The ensemble heard from the session at the latest when it died, so it could expire it
    // one session timeout later: the lease must have ended by two thirds of that.
    while c.session().lease_valid(c.session_timeout(), Instant::now()) {
        assert!(killed.elapsed() < PATIENCE, "the lease outlived the server");
        std::thread::sleep(Duration::from_millis(10));
    }
    let ended = killed.elapsed();
    assert!(
        ended <= c.session_timeout() * 2 / 3 + Duration::from_millis(50),
        "the lease ended {ended:?} after the ensemble's last answer could have been sent"
    );
    while c.session() != SessionHealth::Expired {
        assert!(killed.elapsed() < PATIENCE, "{:?}", c.session());
        std::thread::sleep(Duration::from_millis(20));
    }
    let e = c.register_server("h2,16020,1").unwrap_err();
    assert!(!e.to_string().is_empty());
}

#[test]
fn the_lease_ends_two_thirds_into_the_session_timeout() {
    let timeout = Duration::from_secs(9);
    let t0 = Instant::now();
    let confirmed = SessionHealth::Alive { confirmed: t0 };
    assert!(confirmed.lease_valid(timeout, t0 + Duration::from_millis(5999)));
    assert!(!confirmed.lease_valid(timeout, t0 + Duration::from_secs(6)));
    assert!(!SessionHealth::Expired.lease_valid(timeout, t0));
    // On the in-memory ensemble a test cuts a session off and expires it at will.
    let ensemble = MemoryEnsemble::new();
    let (server, observer) = (ensemble.connect(), ensemble.connect());
    server.register_server("h1,16020,1").unwrap();
    let (_, watch) = observer.live_servers().unwrap();
    ensemble.disconnect(&server, t0);
    assert_eq!(server.session(), confirmed);
    assert!(!watch.fired(), "a cut-off session keeps its nodes");
    ensemble.expire(&server);
    assert!(watch.fired());
    assert_eq!(server.session(), SessionHealth::Expired);
    assert!(observer.live_servers().unwrap().0.is_empty());
}
