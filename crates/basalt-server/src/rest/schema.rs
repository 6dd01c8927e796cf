//! HBase REST's `/T/schema` (`SchemaResource`, `TableSchemaModel`, `ColumnSchemaModel`):
//! a table's descriptor as attribute maps, read, created or replaced (PUT), altered (POST),
//! dropped (DELETE).

use axum::http::{Method, StatusCode};
use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
use prost::Message;
use serde_json::{json, Map, Value};

use crate::rest::admin::{created, scalar, table_name};
use crate::rest::admin::{respond, Forms, ALL};
use crate::rest::media::{self, Format};
use crate::rest::rows::not_allowed;
use crate::rest::{empty, pb, xml, Answer, Call, Gateway, RestError};

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
        pb_columns.push(column_pb(fname, attrs));
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

/// A family's protobuf `ColumnSchema`: its attributes, with TTL, VERSIONS and COMPRESSION
/// also in their own fields.
fn column_pb(name: &str, attrs: &[(String, String)]) -> pb::ColumnSchema {
    let get = |k: &str| attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
    pb::ColumnSchema {
        name: Some(name.to_owned()),
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
    }
}
