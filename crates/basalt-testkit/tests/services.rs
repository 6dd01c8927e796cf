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

/// One HTTP/1.1 exchange; the whole answer, head and body.
fn exchange(address: &str, request: &str, body: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(address).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    write!(
        s,
        "{request} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn seaweedfs_starts_with_a_bucket_takes_an_object_and_stops() {
    let s3 = SeaweedFs::start();
    let address = s3.endpoint.trim_start_matches("http://").to_owned();
    // An object with a body takes a volume server's write: the store is ready for one when
    // `start` returns.
    let put = exchange(
        &address,
        &format!("PUT /{}/greeting", s3.bucket),
        b"hello, basalt",
    );
    assert!(put.starts_with("HTTP/1.1 200"), "{put}\n{}", s3.logs());
    let got = exchange(&address, &format!("GET /{}/greeting", s3.bucket), b"");
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(got.ends_with("\r\n\r\nhello, basalt"), "{got}");
    drop(s3);
    assert!(std::net::TcpStream::connect(&address).is_err());
}
