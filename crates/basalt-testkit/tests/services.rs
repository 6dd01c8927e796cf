//! The test services start, answer, and are gone when dropped.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use basalt_testkit::services::{SeaweedFs, ZooKeeper};

#[test]
fn zookeeper_starts_answers_and_stops() {
    let zk = ZooKeeper::start();
    let address = zk.address.clone();
    assert!(
        std::net::TcpStream::connect(&address).is_ok(),
        "{}",
        zk.log()
    );
    drop(zk);
    assert!(std::net::TcpStream::connect(&address).is_err());
}

#[test]
fn seaweedfs_starts_with_a_bucket_and_stops() {
    let s3 = SeaweedFs::start();
    let address = s3.endpoint.trim_start_matches("http://").to_owned();
    assert!(
        std::net::TcpStream::connect(&address).is_ok(),
        "{}",
        s3.logs()
    );
    drop(s3);
    assert!(std::net::TcpStream::connect(&address).is_err());
}
