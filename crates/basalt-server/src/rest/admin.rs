//! HBase REST's administrative resources: the table list (`/`), `/version`,
//! `/version/cluster`, `/status/cluster`, `/namespaces[/NS[/tables]]`, and per table
//! `schema`, `regions` and `exists`. Each answers text, XML, JSON or protobuf as `Accept`
//! asks (text first when it does not).

use axum::http::{header, HeaderValue, Method, StatusCode};
use basalt_model::TableName;
use prost::Message;
use serde_json::{json, Value};

use crate::rest::cellset::b64;
use crate::rest::media::{self, Format};
use crate::rest::rows::not_allowed;
use crate::rest::{answer, empty, pb, xml, Answer, Call, Gateway, RestError};

/// The REST protocol version HBase reports.
const REST_VERSION: &str = "0.0.3";
/// The HBase release whose behaviour this gateway has.
pub const HBASE_VERSION: &str = "2.6.3";

/// What text, XML, JSON and protobuf answers of a model are.
pub(crate) struct Forms {
    pub text: String,
    pub xml: String,
    pub json: Value,
    pub pb: Option<Vec<u8>>,
}

pub(crate) fn respond(call: &Call, produces: &[Format], forms: Forms) -> Answer {
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

pub(crate) fn get_only(call: &Call) -> Result<(), RestError> {
    if call.method == Method::GET || call.method == Method::HEAD {
        Ok(())
    } else {
        Err(not_allowed("GET"))
    }
}

pub(crate) const ALL: &[Format] = &[Format::Text, Format::Xml, Format::Json, Format::Protobuf];

pub(crate) fn table_list(call: &Call, names: Vec<String>) -> Answer {
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
pub(crate) fn address(server: &str) -> String {
    let mut parts = server.split(',');
    match (parts.next(), parts.next()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        _ => server.to_owned(),
    }
}

/// 201 with `Location` = this request's URL.
pub(crate) fn created(call: &Call) -> Answer {
    let mut r = empty(StatusCode::CREATED);
    if let Ok(v) = HeaderValue::from_str(&call.absolute_url()) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    Ok(r)
}

/// A JSON scalar as Java's `toString` writes it.
pub(crate) fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn table_name(table: &str) -> Result<TableName, RestError> {
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
