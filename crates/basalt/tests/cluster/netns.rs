//! A second host on this machine for the partition tests: a network namespace joined to
//! this one by a veth pair (iproute2; needs root). This side holds two addresses: the
//! link's (`host_ip`), which the namespace's processes answer clients and the master on,
//! and a service address (`service_ip`) for ZooKeeper. Blackholing the service address
//! inside the namespace cuts its processes off from ZooKeeper alone: clients, the master
//! and the shared directory still reach them (the nastiest partition there is).

use std::process::Command;

pub struct Netns {
    pub name: String,
    /// This side's address on the link.
    pub host_ip: String,
    /// The namespace's address: its processes listen there.
    pub ns_ip: String,
    /// This side's address for services (ZooKeeper listens there).
    pub service_ip: String,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "`ip {}` failed: {} (the partition tests need root and iproute2)",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!("running `ip`: {e} (the partition tests need iproute2)"),
    }
}

impl Netns {
    /// A namespace on subnet 10.231.`subnet`.0/24, named after this process so that test
    /// binaries running side by side do not meet.
    pub fn create(subnet: u8) -> Netns {
        let pid = std::process::id() % 100_000;
        let n = Netns {
            name: format!("basalt-{pid}-{subnet}"),
            host_ip: format!("10.231.{subnet}.1"),
            ns_ip: format!("10.231.{subnet}.2"),
            service_ip: format!("10.232.{subnet}.1"),
        };
        let (host_if, ns_if) = (format!("bh{pid}x{subnet}"), format!("bn{pid}x{subnet}"));
        ip(&["netns", "add", &n.name]);
        ip(&[
            "link", "add", &host_if, "type", "veth", "peer", "name", &ns_if,
        ]);
        ip(&["link", "set", &ns_if, "netns", &n.name]);
        ip(&["addr", "add", &format!("{}/24", n.host_ip), "dev", &host_if]);
        ip(&[
            "addr",
            "add",
            &format!("{}/32", n.service_ip),
            "dev",
            &host_if,
        ]);
        ip(&["link", "set", &host_if, "up"]);
        n.exec(&[
            "ip",
            "addr",
            "add",
            &format!("{}/24", n.ns_ip),
            "dev",
            &ns_if,
        ]);
        n.exec(&["ip", "link", "set", &ns_if, "up"]);
        n.exec(&["ip", "link", "set", "lo", "up"]);
        n.heal();
        n
    }

    fn exec(&self, cmd: &[&str]) {
        let mut args = vec!["netns", "exec", &self.name];
        args.extend_from_slice(cmd);
        ip(&args);
    }

    /// A command that runs `program` inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// Cuts the namespace off from the service address: packets to it are dropped.
    pub fn cut(&self) {
        let to = format!("{}/32", self.service_ip);
        self.exec(&["ip", "route", "replace", "blackhole", &to]);
    }

    /// Routes the namespace to the service address again.
    pub fn heal(&self) {
        let to = format!("{}/32", self.service_ip);
        self.exec(&["ip", "route", "replace", &to, "via", &self.host_ip]);
    }
}

impl Drop for Netns {
    /// Deleting the namespace deletes its end of the pair, and with it this end.
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}
