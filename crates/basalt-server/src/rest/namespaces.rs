//! HBase REST's namespaces (`NamespacesResource`, `NamespacesInstanceResource`): list, read,
//! create (POST), alter (PUT, replacing the properties), drop, and a namespace's tables.

use std::collections::BTreeMap;

use axum::http::{Method, StatusCode};
use prost::Message;
use serde_json::{json, Value};

use crate::rest::admin::{created, get_only, scalar, table_list};
use crate::rest::admin::{respond, Forms, ALL};
use crate::rest::media::{self, Format};
use crate::rest::rows::not_allowed;
use crate::rest::{empty, pb, xml, Answer, Call, Gateway, RestError};

/// `/namespaces`, `/namespaces/NS` and `/namespaces/NS/tables`.
pub fn namespaces(g: &Gateway, call: &Call, path: &str) -> Answer {
    let path = path.trim_end_matches('/');
    let admin = g.conn.admin();
    if path.is_empty() {
        get_only(call)?;
        return list(call, admin.list_namespaces()?);
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

/// `GET /namespaces`.
fn list(call: &Call, names: Vec<String>) -> Answer {
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
    respond(call, ALL, forms)
}
