//! HBase REST's `GET /status/cluster` (`StorageClusterStatusResource`): the live servers with
//! their regions and loads, and the dead servers.

use std::collections::BTreeMap;

use basalt_api::ServerStatus;
use basalt_model::region::RegionLoad;
use basalt_model::TableName;
use prost::Message;
use serde_json::{json, Map, Value};

use crate::rest::admin::{address, get_only, respond, Forms, ALL};
use crate::rest::cellset::b64;
use crate::rest::{pb, xml, Answer, Call, Gateway};

fn mb(bytes: u64) -> u64 {
    bytes >> 20
}

/// Regions by the server that hosts them: name and load.
type Hosted = BTreeMap<String, Vec<(Vec<u8>, RegionLoad)>>;

/// The four forms of the model, written node by node.
struct Writer {
    text: String,
    xml: xml::Writer,
    json_nodes: Vec<Value>,
    pb_nodes: Vec<pb::StatusNode>,
}

impl Writer {
    fn node(&mut self, s: &ServerStatus, regions: &[(Vec<u8>, RegionLoad)]) {
        let name = address(&s.name);
        let start_code: i64 = s
            .name
            .rsplit(',')
            .next()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let reqs = s.load.read_requests + s.load.write_requests;
        self.text.push_str(&format!(
            "    {name} {start_code}\n        requests={reqs}, regions={}\n\n",
            regions.len()
        ));
        self.xml
            .open(
                "Node",
                &[("name", &name), ("startCode", &start_code.to_string())],
            )
            .attr("requests", &reqs.to_string())
            .attr("heapSizeMB", "0")
            .attr("maxHeapSizeMB", "0")
            .open_end();
        let mut json_regions = Vec::new();
        let mut pb_regions = Vec::new();
        for (rname, load) in regions {
            json_regions.push(self.region(rname, load));
            pb_regions.push(pb::StatusRegion {
                name: rname.clone().into(),
                stores: Some(1),
                storefiles: i32::try_from(load.store_files).ok(),
                storefile_size_mb: i32::try_from(mb(load.store_file_bytes)).ok(),
                mem_store_size_mb: i32::try_from(mb(load.memstore_bytes)).ok(),
                storefile_index_size_kb: None,
                read_requests_count: i64::try_from(load.read_requests).ok(),
                write_requests_count: i64::try_from(load.write_requests).ok(),
            });
        }
        self.xml.close("Node");
        self.json_nodes.push(
            json!({"name": name, "startCode": start_code, "requests": reqs,
            "heapSizeMB": 0, "maxHeapSizeMB": 0, "Region": json_regions}),
        );
        self.pb_nodes.push(pb::StatusNode {
            name,
            start_code: Some(start_code),
            requests: i64::try_from(reqs).ok(),
            heap_size_mb: Some(0),
            max_heap_size_mb: Some(0),
            regions: pb_regions,
        });
    }

    /// One region in XML and text; returns its JSON.
    fn region(&mut self, rname: &[u8], load: &RegionLoad) -> Value {
        let attrs = [
            ("stores", 1),
            ("storefiles", load.store_files as u64),
            ("storefileSizeMB", mb(load.store_file_bytes)),
            ("memStoreSizeMB", mb(load.memstore_bytes)),
            ("readRequestsCount", load.read_requests),
            ("writeRequestsCount", load.write_requests),
        ];
        self.xml.open("Region", &[("name", &b64(rname))]);
        let mut o = Map::new();
        o.insert("name".into(), Value::String(b64(rname)));
        self.text
            .push_str(&format!("        {}\n", String::from_utf8_lossy(rname)));
        for (k, v) in attrs {
            self.xml.attr(k, &v.to_string());
            o.insert(k.into(), json!(v));
            self.text.push_str(&format!("            {k}={v}\n"));
        }
        self.xml.close_empty();
        Value::Object(o)
    }
}

/// Every table's regions, by server.
fn hosted(g: &Gateway) -> basalt_model::Result<Hosted> {
    let admin = g.conn.admin();
    let mut regions = Hosted::new();
    for t in admin.list_tables(None)? {
        let Ok(name) = TableName::parse(&t) else {
            continue;
        };
        for r in admin.region_reports(&name).unwrap_or_default() {
            regions
                .entry(r.server.clone())
                .or_default()
                .push((r.region.region_name(&name).to_vec(), r.load));
        }
    }
    Ok(regions)
}

/// `GET /status/cluster`: live servers with their regions, dead servers.
pub fn cluster_status(g: &Gateway, call: &Call) -> Answer {
    get_only(call)?;
    let status = g.conn.admin().cluster_status()?;
    let regions = hosted(g)?;
    let total: usize = regions.values().map(Vec::len).sum();
    let requests: u64 = status
        .servers
        .iter()
        .map(|s| s.load.read_requests + s.load.write_requests)
        .sum();
    let live = status.servers.len();
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    let average = if live == 0 {
        0.0
    } else {
        total as f64 / live as f64
    };
    let mut w = Writer {
        text: format!(
            "{live} live servers, {} dead servers, {average:.4} average load\n\n",
            status.dead_servers.len()
        ),
        xml: xml::Writer::new(),
        json_nodes: Vec::new(),
        pb_nodes: Vec::new(),
    };
    w.xml
        .open(
            "ClusterStatus",
            &[
                ("regions", &total.to_string()),
                ("requests", &requests.to_string()),
            ],
        )
        .attr("averageLoad", &average.to_string())
        .open_end()
        .open("LiveNodes", &[])
        .open_end();
    for s in &status.servers {
        w.node(s, regions.get(&s.name).map_or(&[][..], Vec::as_slice));
    }
    w.xml.close("LiveNodes").open("DeadNodes", &[]).open_end();
    for d in &status.dead_servers {
        w.xml.leaf("Node", d);
        w.text.push_str(&format!("    {d}\n"));
    }
    w.xml.close("DeadNodes").close("ClusterStatus");
    let pb = pb::StorageClusterStatus {
        live_nodes: w.pb_nodes,
        dead_nodes: status.dead_servers.clone(),
        regions: i32::try_from(total).ok(),
        requests: i64::try_from(requests).ok(),
        average_load: Some(average),
    };
    let forms = Forms {
        text: w.text,
        xml: w.xml.finish(),
        json: json!({"regions": total, "requests": requests, "averageLoad": average,
            "LiveNodes": w.json_nodes, "DeadNodes": status.dead_servers}),
        pb: Some(pb.encode_to_vec()),
    };
    respond(call, ALL, forms)
}
