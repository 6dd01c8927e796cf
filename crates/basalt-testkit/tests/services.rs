//! The test services start, answer, and are gone when dropped.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use basalt_testkit::services::{http, SeaweedFs, ZooKeeper};

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
fn seaweedfs_starts_with_a_bucket_takes_an_object_and_stops() {
    let s3 = SeaweedFs::start();
    let address = s3.endpoint.trim_start_matches("http://").to_owned();
    // An object with a body takes a volume server's write: the store is ready for one when
    // `start` returns.
    let object = format!("/{}/greeting", s3.bucket);
    let put = http(&address, "PUT", &object, b"hello, basalt");
    assert_eq!(
        put.as_ref().map(|a| a.status),
        Some(200),
        "{put:?}\n{}",
        s3.logs()
    );
    let got = http(&address, "GET", &object, b"");
    assert_eq!(got.as_ref().map(|a| a.status), Some(200), "{got:?}");
    assert_eq!(got.map(|a| a.body), Some(b"hello, basalt".to_vec()));
    drop(s3);
    assert!(std::net::TcpStream::connect(&address).is_err());
}
