//! The cluster's commands: `status`, region assignment, the balancer and decommissioning,
//! with HBase's output.

use std::collections::BTreeMap;

use basalt_api::{ClusterStatus, RegionReport, ServerStatus};
use basalt_model::TableName;

use crate::args::{boolean, list, Args};
use crate::{Returned, Shell, ShellError};

/// `host,port,startcode` as HBase's status prints it: `host:port startcode`.
fn server_line(name: &str) -> String {
    let mut p = name.splitn(3, ',');
    match (p.next(), p.next(), p.next()) {
        (Some(h), Some(port), Some(start)) => format!("{h}:{port} {start}"),
        _ => name.to_owned(),
    }
}

fn mb(bytes: u64) -> u64 {
    bytes >> 20
}

/// A server's load line (HBase's `ServerMetrics` as `status 'simple'` prints it).
fn load_line(s: &ServerStatus) -> String {
    let l = &s.load;
    format!(
        "requestsPerSecond=0.0, numberOfOnlineRegions={}, numberOfStorefiles={}, storefileSizeMB={}, memstoreSizeMB={}, readRequestsCount={}, writeRequestsCount={}",
        s.regions,
        l.store_files,
        mb(l.store_file_bytes),
        mb(l.memstore_bytes),
        l.read_requests,
        l.write_requests
    )
}

fn average_load(c: &ClusterStatus) -> f64 {
    let regions: usize = c.servers.iter().map(|s| s.regions).sum();
    if c.servers.is_empty() {
        0.0
    } else {
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        let avg = regions as f64 / c.servers.len() as f64;
        avg
    }
}

/// `status ['summary'|'simple'|'detailed']`.
pub fn status(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let how = if a.is_empty() {
        "summary".to_owned()
    } else {
        a.string("format")?
    };
    a.done()?;
    let c = sh.admin().cluster_status()?;
    match how.as_str() {
        "summary" => summary(sh, &c)?,
        "simple" => simple(sh, &c, false)?,
        "detailed" => simple(sh, &c, true)?,
        other => {
            return Err(ShellError::usage(format!(
                "status format must be 'summary', 'simple' or 'detailed', not '{other}'"
            )))
        }
    }
    Ok(Returned::Nothing)
}

fn summary(sh: &mut Shell<'_>, c: &ClusterStatus) -> Result<(), ShellError> {
    sh.println(format!(
        "1 active master, {} backup masters, {} servers, {} dead, {:.4} average load",
        c.backup_masters.len(),
        c.servers.len(),
        c.dead_servers.len(),
        average_load(c)
    ))?;
    // HBase's regions in transition: regions not open on a live server; a region that
    // failed to open stays so until repaired.
    let (failed, moving): (Vec<&String>, Vec<&String>) = c
        .in_transition
        .iter()
        .partition(|r| r.contains("FAILED_OPEN"));
    if !failed.is_empty() {
        sh.println(format!(
            "{} regions in FAILED_OPEN (they serve nothing; `basalt hbck` repairs them):",
            failed.len()
        ))?;
        for r in failed {
            sh.println(format!("  {r}"))?;
        }
    }
    if !moving.is_empty() {
        sh.println(format!("{} regions in transition:", moving.len()))?;
        for r in moving {
            sh.println(format!("  {r}"))?;
        }
    }
    Ok(())
}

fn simple(sh: &mut Shell<'_>, c: &ClusterStatus, detailed: bool) -> Result<(), ShellError> {
    let regions = if detailed {
        sh.println(format!("version Basalt {}", env!("CARGO_PKG_VERSION")))?;
        sh.println(format!("{} regionsInTransition", c.in_transition.len()))?;
        for r in &c.in_transition {
            sh.println(format!("    {r}"))?;
        }
        regions_by_server(sh)?
    } else {
        BTreeMap::new()
    };
    sh.println(format!("active master:  {}", server_line(&c.master)))?;
    sh.println(format!("{} backup masters", c.backup_masters.len()))?;
    for b in &c.backup_masters {
        sh.println(format!("    {}", server_line(b)))?;
    }
    sh.println(format!("{} live servers", c.servers.len()))?;
    for s in &c.servers {
        sh.println(format!("    {}", server_line(&s.name)))?;
        sh.println(format!("        {}", load_line(s)))?;
        for (table, r) in regions.get(&s.name).into_iter().flatten() {
            sh.println(format!(
                "        \"{}\"",
                r.region.region_name_string(table)
            ))?;
            let l = &r.load;
            sh.println(format!(
                "            numberOfStorefiles={}, storefileSizeMB={}, memstoreSizeMB={}, readRequestsCount={}, writeRequestsCount={}",
                l.store_files, mb(l.store_file_bytes), mb(l.memstore_bytes), l.read_requests, l.write_requests
            ))?;
        }
    }
    sh.println(format!("{} dead servers", c.dead_servers.len()))?;
    for d in &c.dead_servers {
        sh.println(format!("    {}", server_line(d)))?;
    }
    let total: usize = c.servers.iter().map(|s| s.regions).sum();
    let requests: u64 = c
        .servers
        .iter()
        .map(|s| s.load.read_requests + s.load.write_requests)
        .sum();
    sh.println(format!("Aggregate load: {requests}, regions: {total}"))?;
    Ok(())
}

type ByServer = BTreeMap<String, Vec<(TableName, RegionReport)>>;

/// Every region of every table (`hbase:meta`'s included) by the server holding it.
fn regions_by_server(sh: &mut Shell<'_>) -> Result<ByServer, ShellError> {
    let mut out = ByServer::new();
    for t in sh.admin().list_tables(None)? {
        let name = TableName::parse(&t)?;
        for r in sh.admin().region_reports(&name)? {
            out.entry(r.server.clone())
                .or_default()
                .push((name.clone(), r));
        }
    }
    Ok(out)
}

/// `move 'ENCODED_REGIONNAME'[, 'SERVER_NAME']`.
pub fn move_region(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let region = a.bytes("region name")?;
    let dest = if a.is_empty() {
        None
    } else {
        Some(a.string("server name")?)
    };
    a.done()?;
    sh.admin().move_region(&region, dest.as_deref())?;
    Ok(Returned::Nothing)
}

/// `assign 'REGIONNAME'`.
pub fn assign(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let region = a.bytes("region name")?;
    a.done()?;
    sh.admin().assign(&region)?;
    Ok(Returned::Nothing)
}

/// `unassign 'REGIONNAME'[, force]`.
pub fn unassign(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let region = a.bytes("region name")?;
    if let Some(v) = a.take() {
        boolean(&v, "force")?;
    }
    a.done()?;
    sh.admin().unassign(&region)?;
    Ok(Returned::Nothing)
}

/// `balancer ['force']`: whether the balancer ran.
pub fn balancer(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    a.rest();
    let ran = sh.admin().balance()?;
    sh.println(ran.to_string())?;
    Ok(Returned::Value(ran.to_string()))
}

/// `balance_switch true|false`: prints the previous state.
pub fn balance_switch(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let v = a
        .take()
        .ok_or_else(|| ShellError::usage("balance_switch needs true or false"))?;
    let on = boolean(&v, "the balancer state")?;
    a.done()?;
    let was = sh.admin().balance_switch(on)?;
    sh.println(format!("Previous balancer state : {was}"))?;
    Ok(Returned::Value(was.to_string()))
}

/// `decommission_regionservers 'server' | ['s1', 's2'][, offload]` (offload by default).
pub fn decommission(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let v = a
        .take()
        .ok_or_else(|| ShellError::usage("decommission_regionservers needs server names"))?;
    let servers = list(&v, "server name")?
        .into_iter()
        .map(|s| String::from_utf8_lossy(&s).into_owned())
        .collect::<Vec<_>>();
    let offload = match a.take() {
        Some(v) => boolean(&v, "offload")?,
        None => true,
    };
    a.done()?;
    sh.admin().decommission(&servers, offload)?;
    Ok(Returned::Nothing)
}

/// `recommission_regionserver 'server'[, ['encoded region names']]`.
pub fn recommission(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let server = a.string("server name")?;
    let regions = match a.take() {
        Some(v) => list(&v, "region name")?,
        None => Vec::new(),
    };
    a.done()?;
    sh.admin().recommission(&server)?;
    // HBase loads the named regions back onto the server.
    for r in regions {
        sh.admin().move_region(&r, Some(&server))?;
    }
    Ok(Returned::Nothing)
}

/// `list_decommissioned_regionservers`.
pub fn list_decommissioned(sh: &mut Shell<'_>, a: Args) -> Result<Returned, ShellError> {
    a.done()?;
    let servers = sh.admin().list_decommissioned()?;
    sh.println("DECOMMISSIONED REGION SERVERS")?;
    for s in &servers {
        sh.println(format!(" {s}"))?;
    }
    sh.println(format!("{} row(s)", servers.len()))?;
    Ok(Returned::Nothing)
}
