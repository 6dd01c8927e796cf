//! HBase REST's administrative resources: the table list (`/`), `/version`,
//! `/version/cluster`, `/status/cluster`, `/namespaces[/NS[/tables]]`, and per table
//! `schema`, `regions` and `exists`. Each answers text, XML, JSON or protobuf as `Accept`
//! asks (text first when it does not).

use std::collections::BTreeMap;

use axum::http::{header, HeaderValue, Method, StatusCode};
use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
use prost::Message;
use serde_json::{json, Map, Value};

use crate::rest::cellset::b64;
use crate::rest::media::{self, Format};
use crate::rest::rows::not_allowed;
use crate::rest::{answer, empty, pb, xml, Answer, Call, Gateway, RestError};

/// The REST protocol version HBase reports.
const REST_VERSION: &str = "0.0.3";
/// The HBase release whose behaviour this gateway has.
pub const HBASE_VERSION: &str = "2.6.3";

/// What text, XML, JSON and protobuf answers of a model are.
struct Forms {
    text: String,
    xml: String,
    json: Value,
    pb: Option<Vec<u8>>,
}

fn respond(call: &Call, produces: &[Format], forms: Forms) -> Answer {
    let format = media::negotiate(&call.headers, produces)?;
    let body = match format {
        Format::Text => forms.text.into_bytes(),
        Format::Xml => forms.xml.into_bytes(),
        Format::Protobuf => forms.pb.unwrap_or_default(),
        _ => forms.json.to_string().into_bytes(),
    };
    let mut r = answer(StatusCode::OK, format, body);
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(r)
}

fn get_only(call: &Call) -> Result<(), RestError> {
    if call.method == Method::GET || call.method == Method::HEAD {
        Ok(())
    } else {
        Err(not_allowed("GET"))
    }
}

const ALL: &[Format] = &[Format::Text, Format::Xml, Format::Json, Format::Protobuf];

fn table_list(call: &Call, names: Vec<String>) -> Answer {
    let mut w = xml::Writer::new();
    w.open("TableList", &[]).open_end();
    for n in &names {
        w.open("table", &[("name", n)]).close_empty();
    }
    w.close("TableList");
    let forms = Forms {
        text: names.iter().map(|n| format!("{n}\n")).collect(),
        xml: w.finish(),
        json: json!({"table": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}),
        pb: Some(pb::TableList { name: names }.encode_to_vec()),
    };
    respond(call, ALL, forms)
}

/// `GET /`: every user table, `ns:t` outside the default namespace.
pub fn tables(g: &Gateway, call: &Call) -> Answer {
    get_only(call)?;
    let names = g
        .conn
        .admin()
        .list_tables(None)?
        .into_iter()
        .filter(|n| !n.starts_with("hbase:"))
        .map(|n| n.strip_prefix("default:").map_or(n.clone(), str::to_owned))
        .collect();
    table_list(call, names)
}

/// `GET /version`.
pub fn version(call: &Call) -> Answer {
    get_only(call)?;
    let server = format!("basalt/{}", env!("CARGO_PKG_VERSION"));
    let os = format!("{} {}", std::env::consts::OS, std::env::consts::ARCH);
    let jvm = "none (native)";
    let mut w = xml::Writer::new();
    w.open(
        "Version",
        &[
            ("REST", REST_VERSION),
            ("JVM", jvm),
            ("OS", &os),
            ("Server", &server),
            ("Jersey", ""),
            ("Version", HBASE_VERSION),
            ("Revision", env!("CARGO_PKG_VERSION")),
        ],
    )
    .close_empty();
    let forms = Forms {
        text: format!("rest {REST_VERSION} [JVM: {jvm}] [OS: {os}] [Server: {server}] [Jersey: ] [Version: {HBASE_VERSION}] [Revision: {}]\n", env!("CARGO_PKG_VERSION")),
        xml: w.finish(),
        json: json!({"REST": REST_VERSION, "JVM": jvm, "OS": os, "Server": server, "Jersey": "", "Version": HBASE_VERSION, "Revision": env!("CARGO_PKG_VERSION")}),
        pb: Some(
            pb::Version {
                rest_version: Some(REST_VERSION.into()),
                jvm_version: Some(jvm.into()),
                os_version: Some(os.clone()),
                server_version: Some(server.clone()),
                jersey_version: Some(String::new()),
                version: Some(HBASE_VERSION.into()),
                revision: Some(env!("CARGO_PKG_VERSION").into()),
            }
            .encode_to_vec(),
        ),
    };
    respond(call, ALL, forms)
}

/// `GET /version/cluster` (text, XML and JSON only, as in HBase).
pub fn cluster_version(call: &Call) -> Answer {
    get_only(call)?;
    let mut w = xml::Writer::new();
    w.open("ClusterVersion", &[("Version", HBASE_VERSION)])
        .close_empty();
    let forms = Forms {
        text: HBASE_VERSION.to_owned(),
        xml: w.finish(),
        json: json!({"Version": HBASE_VERSION}),
        pb: None,
    };
    respond(call, &[Format::Text, Format::Xml, Format::Json], forms)
}

/// `host:port` of a server named `host,port,startcode`.
fn address(server: &str) -> String {
    let mut parts = server.split(',');
    match (parts.next(), parts.next()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        _ => server.to_owned(),
    }
}

fn mb(bytes: u64) -> u64 {
    bytes >> 20
}

/// `GET /status/cluster`: live servers with their regions, dead servers.
pub fn cluster_status(g: &Gateway, call: &Call) -> Answer {
    get_only(call)?;
    let admin = g.conn.admin();
    let status = admin.cluster_status()?;
    let mut regions: BTreeMap<String, Vec<(Vec<u8>, basalt_model::region::RegionLoad)>> =
        BTreeMap::new();
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
    let total: usize = regions.values().map(Vec::len).sum();
    let requests: u64 = status
        .servers
        .iter()
        .map(|s| s.load.read_requests + s.load.write_requests)
        .sum();
    let average = if status.servers.is_empty() {
        0.0
    } else {
        total as f64 / status.servers.len() as f64
    };
    let mut nodes = Vec::new();
    let mut pb_nodes = Vec::new();
    let mut text = format!(
        "{} live servers, {} dead servers, {average:.4} average load\n\n",
        status.servers.len(),
        status.dead_servers.len()
    );
    let mut w = xml::Writer::new();
    w.open(
        "ClusterStatus",
        &[
            ("regions", &total.to_string()),
            ("requests", &requests.to_string()),
            ("averageLoad", &average.to_string()),
        ],
    )
    .open_end();
    w.open("LiveNodes", &[]).open_end();
    for s in &status.servers {
        let name = address(&s.name);
        let start_code: i64 = s
            .name
            .rsplit(',')
            .next()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let reqs = s.load.read_requests + s.load.write_requests;
        let mine = regions.get(&s.name).map_or(&[][..], Vec::as_slice);
        text.push_str(&format!(
            "    {name} {start_code}\n        requests={reqs}, regions={}\n\n",
            mine.len()
        ));
        w.open(
            "Node",
            &[
                ("name", &name),
                ("startCode", &start_code.to_string()),
                ("requests", &reqs.to_string()),
                ("heapSizeMB", "0"),
                ("maxHeapSizeMB", "0"),
            ],
        )
        .open_end();
        let mut json_regions = Vec::new();
        let mut pb_regions = Vec::new();
        for (rname, load) in mine {
            let attrs = [
                ("stores", "1".to_owned()),
                ("storefiles", load.store_files.to_string()),
                ("storefileSizeMB", mb(load.store_file_bytes).to_string()),
                ("memStoreSizeMB", mb(load.memstore_bytes).to_string()),
                ("readRequestsCount", load.read_requests.to_string()),
                ("writeRequestsCount", load.write_requests.to_string()),
            ];
            w.open("Region", &[("name", &b64(rname))]);
            for (k, v) in &attrs {
                w.attr(k, v);
            }
            w.close_empty();
            let mut o = Map::new();
            o.insert("name".into(), Value::String(b64(rname)));
            for (k, v) in &attrs {
                o.insert((*k).into(), json!(v.parse::<u64>().unwrap_or(0)));
            }
            json_regions.push(Value::Object(o));
            text.push_str(&format!("        {}\n            storefiless={}\n            readRequestsCount={}\n            writeRequestsCount={}\n", String::from_utf8_lossy(rname), load.store_files, load.read_requests, load.write_requests));
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
        w.close("Node");
        nodes.push(json!({"name": name, "startCode": start_code, "requests": reqs, "heapSizeMB": 0, "maxHeapSizeMB": 0, "Region": json_regions}));
        pb_nodes.push(pb::StatusNode {
            name,
            start_code: Some(start_code),
            requests: i64::try_from(reqs).ok(),
            heap_size_mb: Some(0),
            max_heap_size_mb: Some(0),
            regions: pb_regions,
        });
    }
    w.close("LiveNodes");
    w.open("DeadNodes", &[]).open_end();
    for d in &status.dead_servers {
        w.leaf("Node", d);
        text.push_str(&format!("    {d}\n"));
    }
    w.close("DeadNodes").close("ClusterStatus");
    let forms = Forms {
        text,
        xml: w.finish(),
        json: json!({"regions": total, "requests": requests, "averageLoad": average, "LiveNodes": nodes, "DeadNodes": status.dead_servers}),
        pb: Some(
            pb::StorageClusterStatus {
                live_nodes: pb_nodes,
                dead_nodes: status.dead_servers.clone(),
                regions: i32::try_from(total).ok(),
                requests: i64::try_from(requests).ok(),
                average_load: Some(average),
            }
            .encode_to_vec(),
        ),
    };
    respond(call, ALL, forms)
}

/// `/namespaces`, `/namespaces/NS` and `/namespaces/NS/tables`.
pub fn namespaces(g: &Gateway, call: &Call, path: &str) -> Answer {
    let path = path.trim_end_matches('/');
    let admin = g.conn.admin();
    if path.is_empty() {
        get_only(call)?;
        let names = admin.list_namespaces()?;
        let mut w = xml::Writer::new();
        w.open("Namespaces", &[]).open_end();
        for n in &names {
            w.leaf("Namespace", n);
        }
        w.close("Namespaces");
        let forms = Forms {
            text: names.iter().map(|n| format!("{n}\n")).collect(),
            xml: w.finish(),
            json: json!({"Namespace": names}),
            pb: Some(
                pb::Namespaces {
                    namespace: names.clone(),
                }
                .encode_to_vec(),
            ),
        };
        return respond(call, ALL, forms);
    }
    let (ns, tables) = match path.split_once('/') {
        Some((ns, "tables")) => (ns, true),
        Some(_) => return Err(RestError::not_found("no such resource under /namespaces")),
        None => (path, false),
    };
    let ns = String::from_utf8_lossy(&crate::rest::rowspec::url_decode(ns)?).into_owned();
    match call.method {
        Method::GET | Method::HEAD if tables => table_list(call, admin.list_namespace_tables(&ns)?),
        Method::GET | Method::HEAD => {
            namespace_properties(call, &ns, &admin.namespace_properties(&ns)?)
        }
        Method::POST => {
            g.writable()?;
            let props = properties_of(call)?;
            if admin.list_namespaces()?.contains(&ns) {
                return Err(RestError::new(StatusCode::FORBIDDEN, format!("Namespace '{ns}' already exists.  Use REST PUT to alter the existing namespace.")));
            }
            admin.create_namespace(&ns, props)?;
            created(call)
        }
        Method::PUT => {
            g.writable()?;
            let props = properties_of(call)?;
            let Ok(old) = admin.namespace_properties(&ns) else {
                return Err(RestError::new(
                    StatusCode::FORBIDDEN,
                    format!(
                        "Namespace '{ns}' does not exist. Use REST POST to create the namespace."
                    ),
                ));
            };
            let unset: Vec<String> = old
                .keys()
                .filter(|k| !props.contains_key(*k))
                .cloned()
                .collect();
            admin.alter_namespace(&ns, props, &unset)?;
            Ok(empty(StatusCode::OK))
        }
        Method::DELETE => {
            g.writable()?;
            if !admin.list_namespaces()?.contains(&ns) {
                return Err(RestError::new(
                    StatusCode::NOT_FOUND,
                    format!("Namespace '{ns}' does not exists.  Cannot drop namespace."),
                ));
            }
            admin.drop_namespace(&ns).map_err(|e| match e {
                basalt_model::Error::NamespaceNotFound(_) => RestError::from_model(&e),
                other => RestError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("Unavailable\r\n{}: {other}", other.exception_name()),
                ),
            })?;
            Ok(empty(StatusCode::OK))
        }
        _ => Err(not_allowed("GET, PUT, POST, DELETE")),
    }
}

/// 201 with `Location` = this request's URL.
fn created(call: &Call) -> Answer {
    let mut r = empty(StatusCode::CREATED);
    if let Ok(v) = HeaderValue::from_str(&call.absolute_url()) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    Ok(r)
}

fn namespace_properties(call: &Call, ns: &str, props: &BTreeMap<String, String>) -> Answer {
    let mut w = xml::Writer::new();
    w.open("NamespaceProperties", &[])
        .open_end()
        .open("properties", &[])
        .open_end();
    for (k, v) in props {
        w.open("entry", &[])
            .open_end()
            .leaf("key", k)
            .leaf("value", v)
            .close("entry");
    }
    w.close("properties").close("NamespaceProperties");
    let text: String = props
        .iter()
        .map(|(k, v)| format!(", {k} => '{v}'"))
        .collect();
    let forms = Forms {
        text: format!("{{NAME => '{ns}'{text}}}"),
        xml: w.finish(),
        json: json!({"properties": if props.is_empty() { Value::Null } else { json!(props) }}),
        pb: Some(
            pb::NamespaceProperties {
                props: props
                    .iter()
                    .map(|(k, v)| pb::Property {
                        key: k.clone(),
                        value: v.clone(),
                    })
                    .collect(),
            }
            .encode_to_vec(),
        ),
    };
    respond(call, ALL, forms)
}

/// A namespace body's properties; an empty body is none.
fn properties_of(call: &Call) -> Result<BTreeMap<String, String>, RestError> {
    if call.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(BTreeMap::new());
    }
    let mut props = BTreeMap::new();
    match media::body_format(&call.headers, media::MODELS)? {
        Format::Json => {
            let v: Value = serde_json::from_slice(&call.body)
                .map_err(|e| RestError::bad_request(format!("malformed JSON: {e}")))?;
            if let Some(Value::Object(m)) = v.get("properties") {
                for (k, v) in m {
                    props.insert(k.clone(), scalar(v));
                }
            }
        }
        Format::Xml => {
            let root = xml::parse(&call.body).map_err(RestError::bad_request)?;
            for entry in root.each("properties").flat_map(|p| p.each("entry")) {
                let text = |n: &str| {
                    entry
                        .each(n)
                        .next()
                        .map(|e| e.text.clone())
                        .unwrap_or_default()
                };
                props.insert(text("key"), text("value"));
            }
        }
        _ => {
            let m = pb::NamespaceProperties::decode(&call.body[..]).map_err(|e| {
                RestError::bad_request(format!("malformed protobuf NamespaceProperties: {e}"))
            })?;
            props.extend(m.props.into_iter().map(|p| (p.key, p.value)));
        }
    }
    Ok(props)
}

/// A JSON scalar as Java's `toString` writes it.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn table_name(table: &str) -> Result<TableName, RestError> {
    TableName::parse(table).map_err(RestError::bad_request)
}

/// `GET /T/exists`: 200 or 404, no body.
pub fn exists(g: &Gateway, call: &Call, table: &str) -> Answer {
    get_only(call)?;
    if g.conn.admin().table_exists(&table_name(table)?)? {
        let mut r = empty(StatusCode::OK);
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        Ok(r)
    } else {
        Err(RestError::new(StatusCode::NOT_FOUND, "Not found"))
    }
}

/// `GET /T/regions`.
pub fn regions(g: &Gateway, call: &Call, table: &str) -> Answer {
    get_only(call)?;
    let name = table_name(table)?;
    let reports = g.conn.admin().region_reports(&name)?;
    let mut w = xml::Writer::new();
    w.open("TableInfo", &[("name", table)]).open_end();
    let (mut json_regions, mut pb_regions, mut text) = (Vec::new(), Vec::new(), String::new());
    for r in &reports {
        let rname = r.region.region_name_string(&name);
        let location = address(&r.server);
        let (start, end) = (b64(&r.region.start_key), b64(&r.region.end_key));
        w.open(
            "Region",
            &[
                ("endKey", &end),
                ("id", &r.region.id.to_string()),
                ("location", &location),
                ("name", &rname),
                ("startKey", &start),
            ],
        )
        .close_empty();
        json_regions.push(json!({"id": r.region.id, "startKey": start, "endKey": end, "location": location, "name": rname}));
        text.push_str(&format!(
            "{rname} [\n  id={}\n  startKey='{}'\n  endKey='{}'\n  location='{location}'\n]\n",
            r.region.id,
            String::from_utf8_lossy(&r.region.start_key),
            String::from_utf8_lossy(&r.region.end_key)
        ));
        pb_regions.push(pb::TableRegion {
            name: rname,
            start_key: Some(r.region.start_key.clone()),
            end_key: Some(r.region.end_key.clone()),
            id: i64::try_from(r.region.id).ok(),
            location: Some(location),
        });
    }
    w.close("TableInfo");
    text.push('\n');
    let forms = Forms {
        text,
        xml: w.finish(),
        json: json!({"name": table, "Region": json_regions}),
        pb: Some(
            pb::TableInfo {
                name: table.to_owned(),
                regions: pb_regions,
            }
            .encode_to_vec(),
        ),
    };
    respond(call, ALL, forms)
}

/// `/T/schema`: GET reads it, PUT creates or replaces the table, POST adds or changes
/// families (or creates), DELETE drops the table.
pub fn schema(g: &Gateway, call: &Call, table: &str) -> Answer {
    let name = table_name(table)?;
    let admin = g.conn.admin();
    match call.method {
        Method::GET | Method::HEAD => schema_of(call, &admin.describe(&name)?),
        Method::PUT | Method::POST => {
            g.writable()?;
            let model = SchemaModel::decode(call)?;
            let exists = admin.table_exists(&name)?;
            if call.method == Method::POST && exists {
                let mut desc = admin.describe(&name)?;
                for (family, attrs) in &model.families {
                    desc.families
                        .insert(family.clone().into(), family_of(family, attrs)?);
                }
                desc.validate()?;
                admin.modify_table(desc)?;
                return Ok(empty(StatusCode::OK));
            }
            let desc = model.descriptor(&name)?;
            if exists {
                admin.modify_table(desc)?;
            } else {
                admin.create_table(desc, &[])?;
            }
            created(call)
        }
        Method::DELETE => {
            g.writable()?;
            if admin.is_enabled(&name)? {
                admin.disable_table(&name)?;
            }
            admin.delete_table(&name)?;
            Ok(empty(StatusCode::OK))
        }
        _ => Err(not_allowed("GET, PUT, POST, DELETE")),
    }
}

fn family_of(name: &str, attrs: &[(String, String)]) -> Result<ColumnFamilyDescriptor, RestError> {
    let mut f = ColumnFamilyDescriptor::new(name.as_bytes().to_vec());
    for (k, v) in attrs {
        f.set_value(k, v)?;
    }
    f.validate()?;
    Ok(f)
}

/// A `TableSchema` body: table attributes and families with theirs.
#[derive(Debug, Default)]
struct SchemaModel {
    attrs: Vec<(String, String)>,
    families: Vec<(String, Vec<(String, String)>)>,
}

impl SchemaModel {
    fn descriptor(&self, name: &TableName) -> Result<TableDescriptor, RestError> {
        let families = self
            .families
            .iter()
            .map(|(n, a)| family_of(n, a))
            .collect::<Result<Vec<_>, _>>()?;
        let mut desc = TableDescriptor::with_families(name, families)?;
        for (k, v) in &self.attrs {
            desc.set_value(k, v)?;
        }
        desc.validate()?;
        Ok(desc)
    }

    fn decode(call: &Call) -> Result<SchemaModel, RestError> {
        match media::body_format(&call.headers, media::MODELS)? {
            Format::Json => Self::from_json(&call.body),
            Format::Xml => Self::from_xml(&call.body),
            _ => Self::from_pb(&call.body),
        }
    }

    fn from_json(body: &[u8]) -> Result<SchemaModel, RestError> {
        let v: Value = serde_json::from_slice(body)
            .map_err(|e| RestError::bad_request(format!("malformed JSON: {e}")))?;
        let Value::Object(root) = v else {
            return Err(RestError::bad_request("a table schema is a JSON object"));
        };
        let mut m = SchemaModel::default();
        for (k, v) in &root {
            match k.as_str() {
                "name" => {}
                "ColumnSchema" => {
                    let cols = match v {
                        Value::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    for c in cols {
                        let Value::Object(c) = c else {
                            return Err(RestError::bad_request("a ColumnSchema is a JSON object"));
                        };
                        let name = c
                            .get("name")
                            .and_then(Value::as_str)
                            .ok_or_else(|| RestError::bad_request("a ColumnSchema needs a name"))?;
                        let attrs = c
                            .iter()
                            .filter(|(k, _)| *k != "name")
                            .map(|(k, v)| (k.clone(), scalar(v)))
                            .collect();
                        m.families.push((name.to_owned(), attrs));
                    }
                }
                _ => m.attrs.push((k.clone(), scalar(v))),
            }
        }
        Ok(m)
    }

    fn from_xml(body: &[u8]) -> Result<SchemaModel, RestError> {
        let root = xml::parse(body).map_err(RestError::bad_request)?;
        if root.name != "TableSchema" {
            return Err(RestError::bad_request(format!(
                "the XML body is <{}>, not <TableSchema>",
                root.name
            )));
        }
        let rest = |e: &xml::Element| {
            e.attrs
                .iter()
                .filter(|(k, _)| k != "name")
                .cloned()
                .collect::<Vec<_>>()
        };
        let mut m = SchemaModel {
            attrs: rest(&root),
            families: Vec::new(),
        };
        for c in root.each("ColumnSchema") {
            let name = c
                .attr("name")
                .ok_or_else(|| RestError::bad_request("a ColumnSchema needs a name"))?;
            m.families.push((name.to_owned(), rest(c)));
        }
        Ok(m)
    }

    fn from_pb(body: &[u8]) -> Result<SchemaModel, RestError> {
        let s = pb::TableSchema::decode(body)
            .map_err(|e| RestError::bad_request(format!("malformed protobuf TableSchema: {e}")))?;
        let mut m = SchemaModel {
            attrs: s.attrs.into_iter().map(|a| (a.name, a.value)).collect(),
            families: Vec::new(),
        };
        if let Some(ro) = s.read_only {
            m.attrs.push(("READONLY".into(), ro.to_string()));
        }
        for c in s.columns {
            let mut attrs: Vec<(String, String)> =
                c.attrs.into_iter().map(|a| (a.name, a.value)).collect();
            attrs.extend(c.ttl.map(|t| ("TTL".to_owned(), t.to_string())));
            attrs.extend(
                c.max_versions
                    .map(|v| ("VERSIONS".to_owned(), v.to_string())),
            );
            attrs.extend(c.compression.map(|z| ("COMPRESSION".to_owned(), z)));
            let name = c
                .name
                .ok_or_else(|| RestError::bad_request("a ColumnSchema needs a name"))?;
            m.families.push((name, attrs));
        }
        Ok(m)
    }
}

/// The schema's forms: the table's values (with IS_META, as HBase shows it), then each
/// family's.
fn schema_of(call: &Call, desc: &TableDescriptor) -> Answer {
    let name = desc.table_name();
    let shown = if name.namespace() == "default" {
        name.qualifier().to_owned()
    } else {
        name.to_string()
    };
    let mut table_attrs = vec![("IS_META".to_owned(), "false".to_owned())];
    table_attrs.extend(desc.values());
    let families: Vec<(String, Vec<(String, String)>)> = desc
        .families
        .values()
        .map(|f| (String::from_utf8_lossy(&f.name).into_owned(), f.values()))
        .collect();
    let mut w = xml::Writer::new();
    w.open("TableSchema", &[("name", &shown)]);
    for (k, v) in &table_attrs {
        w.attr(k, v);
    }
    w.open_end();
    let mut json_families = Vec::new();
    let mut pb_columns = Vec::new();
    let mut text_families = Vec::new();
    for (fname, attrs) in &families {
        w.open("ColumnSchema", &[("name", fname)]);
        let mut o = Map::new();
        o.insert("name".into(), json!(fname));
        for (k, v) in attrs {
            w.attr(k, v);
            o.insert(k.clone(), json!(v));
        }
        w.close_empty();
        json_families.push(Value::Object(o));
        let get = |k: &str| attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
        pb_columns.push(pb::ColumnSchema {
            name: Some(fname.clone()),
            attrs: attrs
                .iter()
                .map(|(k, v)| pb::Attribute {
                    name: k.clone(),
                    value: v.clone(),
                })
                .collect(),
            ttl: get("TTL").and_then(|t| t.parse().ok()),
            max_versions: get("VERSIONS").and_then(|t| t.parse().ok()),
            compression: get("COMPRESSION"),
        });
        let body: String = attrs
            .iter()
            .map(|(k, v)| format!(", {k} => '{v}'"))
            .collect();
        text_families.push(format!("{{ NAME => '{fname}'{body} }}"));
    }
    w.close("TableSchema");
    let mut root = Map::new();
    root.insert("name".into(), json!(shown));
    root.insert("ColumnSchema".into(), Value::Array(json_families));
    for (k, v) in &table_attrs {
        root.insert(k.clone(), json!(v));
    }
    let table_text: String = table_attrs
        .iter()
        .map(|(k, v)| format!(", {k} => '{v}'"))
        .collect();
    let forms = Forms {
        text: format!(
            "{{ NAME=> '{shown}'{table_text}, COLUMNS => [ {} ] }}",
            text_families.join(", ")
        ),
        xml: w.finish(),
        json: Value::Object(root),
        pb: Some(
            pb::TableSchema {
                name: Some(shown.clone()),
                attrs: table_attrs
                    .iter()
                    .map(|(k, v)| pb::Attribute {
                        name: k.clone(),
                        value: v.clone(),
                    })
                    .collect(),
                columns: pb_columns,
                in_memory: None,
                read_only: desc.read_only.then_some(true),
            }
            .encode_to_vec(),
        ),
    };
    respond(call, ALL, forms)
}
