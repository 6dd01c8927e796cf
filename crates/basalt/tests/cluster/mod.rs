//! A cluster as separate processes for the end-to-end tests: a real ZooKeeper, `basalt
//! master` and `basalt regionserver`s on loopback, over shared storage.
#![allow(dead_code)] // each test binary uses part of it

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use basalt_api::ClusterStatus;
use basalt_client::Admin;
use basalt_testkit::services::ZooKeeper;

use super::process;

pub mod load;
pub mod netns;

/// A master or region server process; killed when dropped, stopped cleanly by `stop`.
pub struct Process {
    pub child: Child,
    pub addr: String,
    pub name: String,
    /// The web page's URL (`http://ADDR/`).
    pub info: String,
    /// Kept open: the process prints a second line, and a closed pipe would fail it.
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Process {
    pub fn start(
        kind: &str,
        zookeeper: &str,
        storage: &str,
        env: &[(&str, String)],
        args: &[String],
    ) -> Process {
        let program = Command::new(env!("CARGO_BIN_EXE_basalt"));
        Process::start_by(program, kind, zookeeper, storage, env, args)
    }

    /// Starts a process by `program`: the binary, or a command that runs it (inside a
    /// network namespace).
    pub fn start_by(
        mut program: Command,
        kind: &str,
        zookeeper: &str,
        storage: &str,
        env: &[(&str, String)],
        args: &[String],
    ) -> Process {
        let (child, mut stdout, line) = spawn(
            program
                .args([kind, "--zookeeper", zookeeper, "--storage", storage])
                .args(["--port", "0", "--info-port", "0"])
                .args(args)
                .envs(env.iter().map(|(k, v)| (*k, v.as_str()))),
        );
        // `Basalt master NAME listening on ADDR`, `Basalt region server NAME listening on ADDR`.
        let words: Vec<&str> = line.split_whitespace().collect();
        assert!(words.len() >= 5, "{kind} printed {line:?}");
        // `Web page and metrics on http://ADDR/`.
        let mut second = String::new();
        stdout.read_line(&mut second).unwrap();
        let info = second.split_whitespace().last().unwrap_or_default();
        assert!(info.starts_with("http://"), "{kind} printed {second:?}");
        Process {
            addr: words[words.len() - 1].to_owned(),
            name: words[words.len() - 4].to_owned(),
            info: info.replace("0.0.0.0", "127.0.0.1"),
            child,
            _stdout: stdout,
        }
    }

    /// `basalt thrift --server SEEDS`: HBase's Thrift gateway as a client of the cluster.
    pub fn thrift_gateway(seeds: &str) -> Process {
        let (child, stdout, line) = spawn(
            Command::new(env!("CARGO_BIN_EXE_basalt"))
                .args(["thrift", "--server", seeds, "--port", "0"]),
        );
        // `HBase Thrift gateway on ADDR, serving the server at SEEDS`.
        let addr = line.split_whitespace().nth(4).unwrap_or_default();
        assert!(addr.ends_with(','), "the gateway printed {line:?}");
        Process {
            addr: addr.trim_end_matches(',').to_owned(),
            name: "thrift".to_owned(),
            info: String::new(),
            child,
            _stdout: stdout,
        }
    }

    /// SIGTERM, and the process ends cleanly.
    pub fn stop(mut self) {
        process::terminate(&mut self.child, &self.name);
    }
}

/// Starts `cmd` and reads the first line it prints (its address).
fn spawn(cmd: &mut Command) -> (Child, BufReader<std::process::ChildStdout>, String) {
    let mut child = cmd
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    (child, stdout, line)
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// ZooKeeper, a master and three region servers.
pub struct Cluster {
    pub zookeeper: ZooKeeper,
    pub storage: String,
    pub env: Vec<(&'static str, String)>,
    pub masters: Vec<Process>,
    pub servers: Vec<Process>,
    /// More arguments for every process (a `--config` file).
    pub args: Vec<String>,
}

impl Cluster {
    pub fn start(storage: String, env: Vec<(&'static str, String)>) -> Cluster {
        Cluster::start_with(storage, env, Vec::new())
    }

    /// A cluster whose every process also gets `args`.
    pub fn start_with(
        storage: String,
        env: Vec<(&'static str, String)>,
        args: Vec<String>,
    ) -> Cluster {
        Cluster::start_on(ZooKeeper::start(), storage, env, args)
    }

    /// A cluster on `zookeeper`.
    pub fn start_on(
        zookeeper: ZooKeeper,
        storage: String,
        env: Vec<(&'static str, String)>,
        args: Vec<String>,
    ) -> Cluster {
        let mut c = Cluster {
            zookeeper,
            storage,
            env,
            masters: Vec::new(),
            servers: Vec::new(),
            args,
        };
        c.start_processes();
        c
    }

    pub fn start_processes(&mut self) {
        let zk = self.zookeeper.address.clone();
        self.masters.push(Process::start(
            "master",
            &zk,
            &self.storage,
            &self.env,
            &self.args,
        ));
        for _ in 0..3 {
            let rs = Process::start("regionserver", &zk, &self.storage, &self.env, &self.args);
            self.servers.push(rs);
        }
    }

    /// Every process's address: any of them is a seed.
    pub fn seeds(&self) -> String {
        let all: Vec<&str> = self
            .servers
            .iter()
            .chain(&self.masters)
            .map(|p| p.addr.as_str())
            .collect();
        all.join(",")
    }

    pub fn stop_all(&mut self) {
        for p in self.servers.drain(..) {
            p.stop();
        }
        for p in self.masters.drain(..) {
            p.stop();
        }
    }
}

/// Polls the active master's status (a service outside this process) until `ready`.
pub async fn wait_for(
    admin: &Admin,
    what: &str,
    ready: impl Fn(&ClusterStatus) -> bool,
) -> ClusterStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(s) = admin.cluster_status().await {
            if ready(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "{what}: still {s:#?}");
        }
        assert!(Instant::now() < deadline, "{what}: no status");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn all_assigned(live: usize) -> impl Fn(&ClusterStatus) -> bool {
    move |s| s.servers.len() == live && s.in_transition.is_empty() && !s.master.is_empty()
}
