//! Helpers of the Bigtable end-to-end tests: a `basalt server` process, Google's Bigtable
//! emulator (`cbtemulator`) and `cbt` found on the machine, and gRPC clients of both.
//!
//! `cbt` and `cbtemulator` come from Google's Debian packages `google-cloud-cli-cbt` and
//! `google-cloud-cli-bigtable-emulator`, which Debian's own archive does not carry: a
//! machine without them fails these tests with a message that says how to point at them.

pub mod answer;
pub mod cbt_session;
pub mod describe;
pub mod filters;
pub mod ops;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use basalt_bigtable_proto::google::bigtable::admin::v2::bigtable_table_admin_client::BigtableTableAdminClient;
use basalt_bigtable_proto::google::bigtable::v2::bigtable_client::BigtableClient;
use tonic::transport::Channel;

/// The instance every request names (Basalt and the emulator accept any).
pub const INSTANCE: &str = "projects/p/instances/i";

/// Where Google's Debian package `google-cloud-cli-bigtable-emulator` installs the emulator
/// (it is not put on PATH).
const PACKAGED_EMULATOR: &str = "/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator";

/// A Google tool: `$env` if set, else `name` on PATH, else `packaged`; a clear failure if
/// none is there.
fn google_tool(name: &str, env: &str, packaged: Option<&str>) -> PathBuf {
    if let Some(p) = std::env::var_os(env) {
        return PathBuf::from(p);
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if let Some(p) = on_path.or_else(|| packaged.map(PathBuf::from).filter(|p| p.is_file())) {
        return p;
    }
    panic!(
        "`{name}` was not found: install Google's Debian packages google-cloud-cli-cbt and \
         google-cloud-cli-bigtable-emulator (from Google Cloud's apt repository), or set {env} \
         to the program"
    );
}

/// The `cbt` command-line tool (`BASALT_CBT` overrides).
pub fn cbt() -> PathBuf {
    google_tool("cbt", "BASALT_CBT", None)
}

/// Google's Bigtable emulator (`BASALT_CBTEMULATOR` overrides).
pub fn cbtemulator() -> PathBuf {
    google_tool("cbtemulator", "BASALT_CBTEMULATOR", Some(PACKAGED_EMULATOR))
}

/// A `basalt server` on free ports; killed when dropped.
pub struct BasaltServer {
    child: Child,
    /// The native API, for `basalt shell --server`.
    pub native: String,
    /// The Bigtable API, `host:port`.
    pub bigtable: String,
    _dir: tempfile::TempDir,
}

impl BasaltServer {
    pub fn start() -> BasaltServer {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_basalt"))
            .args(["server", "--bind", "127.0.0.1"])
            .args(["--port", "0", "--info-port", "0", "--thrift-port", "0"])
            .args(["--bigtable-port", "0", "--rest-port", "0", "--data-dir"])
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        // Native API, web page, Thrift, then the Bigtable API: one line each.
        let lines: Vec<String> = (0..4)
            .map(|_| {
                let mut line = String::new();
                stdout.read_line(&mut line).unwrap();
                line
            })
            .collect();
        let last_word = |l: &str| l.split_whitespace().last().unwrap_or_default().to_owned();
        assert!(lines[3].starts_with("Bigtable API on "), "{lines:?}");
        let native = lines[0]
            .split_whitespace()
            .nth(4)
            .unwrap_or_else(|| panic!("no address in {:?}", lines[0]))
            .to_owned();
        BasaltServer {
            child,
            native,
            bigtable: last_word(&lines[3]),
            _dir: dir,
        }
    }
}

impl Drop for BasaltServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Google's emulator on a free port of 127.0.0.1; killed when dropped.
pub struct Emulator {
    child: Child,
    pub addr: String,
}

impl Emulator {
    pub fn start() -> Emulator {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = Command::new(cbtemulator())
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addr = format!("127.0.0.1:{port}");
        wait_for_port(&addr, "cbtemulator");
        Emulator { child, addr }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for_port(addr: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {addr}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A data client and an admin client of one server.
pub struct Clients {
    pub data: BigtableClient<Channel>,
    pub admin: BigtableTableAdminClient<Channel>,
}

pub async fn connect(addr: &str) -> Clients {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    Clients {
        // A row is one message from the emulator; Bigtable's clients take up to 256 MiB.
        data: BigtableClient::new(channel.clone()).max_decoding_message_size(256 << 20),
        admin: BigtableTableAdminClient::new(channel),
    }
}

/// `cbt -project p -instance i ARGS` against `addr` (in emulator mode, times shown in UTC):
/// its exit status and stdout (its stderr only says it uses no credentials).
pub fn run_cbt(addr: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(cbt())
        .args(["-project", "p", "-instance", "i"])
        .args(args)
        .env("BIGTABLE_EMULATOR_HOST", addr)
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// `basalt shell --server native` with `script` on its standard input: its stdout.
pub fn run_shell(native: &str, script: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["shell", "-n", "--server", native])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the shell failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
