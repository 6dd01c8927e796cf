//! HBase REST's `CellSet` model (rows of cells) in its three representations:
//!
//! - JSON: `{"Row":[{"key":B64,"Cell":[{"column":B64,"timestamp":N,"$":B64}]}]}`
//! - XML: `<CellSet><Row key="B64"><Cell column="B64" timestamp="N">B64</Cell></Row></CellSet>`
//! - protobuf: `CellSet { rows { key, values { column, timestamp, data } } }`
//!
//! Keys, columns (`family:qualifier`) and values are base64 in JSON and XML. A cell
//! without a timestamp takes the server's clock; a row or cell without a key or column
//! takes it from the path (the "false row key" convention: the path's row is a
//! placeholder when the body names its rows).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use prost::Message;
use serde_json::{json, Map, Value};

use crate::rest::media::Format;
use crate::rest::{pb, xml, RestError};
use basalt_model::{Cell, RowResult, LATEST_TIMESTAMP};

/// One cell of a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellModel {
    pub column: Option<Bytes>,
    pub timestamp: i64,
    pub value: Bytes,
}

/// One row of a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowModel {
    pub key: Option<Bytes>,
    pub cells: Vec<CellModel>,
}

/// Base64 as the models carry it; padding optional on input.
pub fn b64(data: &[u8]) -> String {
    STANDARD.encode(data)
}

/// Decodes base64 of a model field (`what` names it in the error).
///
/// # Errors
/// A 400 naming the field.
pub fn unb64(what: &str, text: &str) -> Result<Bytes, RestError> {
    use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
    use base64::engine::DecodePaddingMode;
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let text: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    LENIENT
        .decode(text.as_bytes())
        .map(Bytes::from)
        .map_err(|e| RestError::bad_request(format!("{what} is not valid base64: {e}")))
}

/// Reads a `CellSet` body.
///
/// # Errors
/// A 400 saying what is malformed.
pub fn decode(format: Format, body: &[u8]) -> Result<Vec<RowModel>, RestError> {
    match format {
        Format::Json => from_json(body),
        Format::Xml => from_xml(body),
        Format::Protobuf => from_pb(body),
        Format::Binary | Format::Text => Err(RestError::bad_request(
            "a cell set is XML, JSON or protobuf",
        )),
    }
}

/// A JSON field that clients send as one object or as a list of them.
fn one_or_many(v: Option<&Value>) -> Vec<&Value> {
    match v {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(other) => vec![other],
    }
}

fn json_text<'a>(what: &str, v: &'a Value) -> Result<&'a str, RestError> {
    v.as_str()
        .ok_or_else(|| RestError::bad_request(format!("{what} must be a base64 string")))
}

/// A timestamp given as a number or a numeric string.
fn json_timestamp(v: Option<&Value>) -> Result<i64, RestError> {
    match v {
        None | Some(Value::Null) => Ok(LATEST_TIMESTAMP),
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| RestError::bad_request(format!("timestamp {n} is not a long"))),
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map_err(|_| RestError::bad_request(format!("timestamp '{s}' is not a long"))),
        Some(other) => Err(RestError::bad_request(format!(
            "timestamp {other} is not a long"
        ))),
    }
}

fn from_json(body: &[u8]) -> Result<Vec<RowModel>, RestError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| RestError::bad_request(format!("malformed JSON: {e}")))?;
    let Value::Object(root) = v else {
        return Err(RestError::bad_request("a cell set is a JSON object"));
    };
    let mut rows = Vec::new();
    for row in one_or_many(root.get("Row")) {
        let key = match row.get("key") {
            Some(k) if !k.is_null() => Some(unb64("a row key", json_text("key", k)?)?),
            _ => None,
        };
        let mut cells = Vec::new();
        for cell in one_or_many(row.get("Cell")) {
            let column = match cell.get("column") {
                Some(c) if !c.is_null() => Some(unb64("a column", json_text("column", c)?)?),
                _ => None,
            };
            let value = match cell.get("$") {
                Some(v) if !v.is_null() => unb64("a value", json_text("$", v)?)?,
                _ => Bytes::new(),
            };
            cells.push(CellModel {
                column,
                timestamp: json_timestamp(cell.get("timestamp"))?,
                value,
            });
        }
        rows.push(RowModel { key, cells });
    }
    Ok(rows)
}

fn from_xml(body: &[u8]) -> Result<Vec<RowModel>, RestError> {
    let root = xml::parse(body).map_err(RestError::bad_request)?;
    if root.name != "CellSet" {
        return Err(RestError::bad_request(format!(
            "the XML body is <{}>, not <CellSet>",
            root.name
        )));
    }
    let mut rows = Vec::new();
    for row in root.each("Row") {
        let key = row.attr("key").map(|k| unb64("a row key", k)).transpose()?;
        let mut cells = Vec::new();
        for cell in row.each("Cell") {
            let timestamp = match cell.attr("timestamp") {
                Some(t) => t.trim().parse().map_err(|_| {
                    RestError::bad_request(format!("timestamp '{t}' is not a long"))
                })?,
                None => LATEST_TIMESTAMP,
            };
            cells.push(CellModel {
                column: cell
                    .attr("column")
                    .map(|c| unb64("a column", c))
                    .transpose()?,
                timestamp,
                value: unb64("a value", &cell.text)?,
            });
        }
        rows.push(RowModel { key, cells });
    }
    Ok(rows)
}

fn from_pb(body: &[u8]) -> Result<Vec<RowModel>, RestError> {
    let set = pb::CellSet::decode(body)
        .map_err(|e| RestError::bad_request(format!("malformed protobuf CellSet: {e}")))?;
    Ok(set
        .rows
        .into_iter()
        .map(|r| RowModel {
            key: r.key,
            cells: r
                .values
                .into_iter()
                .map(|c| CellModel {
                    column: c.column,
                    timestamp: c.timestamp.unwrap_or(LATEST_TIMESTAMP),
                    value: c.data.unwrap_or_default(),
                })
                .collect(),
        })
        .collect())
}

/// `family:qualifier` of a cell.
pub fn column_of(c: &Cell) -> Vec<u8> {
    let mut col = Vec::with_capacity(c.family.len() + 1 + c.qualifier().len());
    col.extend_from_slice(&c.family);
    col.push(b':');
    col.extend_from_slice(c.qualifier());
    col
}

/// Writes rows as a `CellSet` body.
pub fn encode(format: Format, rows: &[RowResult]) -> Vec<u8> {
    match format {
        Format::Protobuf => to_pb(rows).encode_to_vec(),
        Format::Xml => to_xml(rows).into_bytes(),
        _ => to_json(rows).to_string().into_bytes(),
    }
}

/// The JSON of rows (also the pieces a streamed table scan writes).
pub fn row_json(r: &RowResult) -> Value {
    let cells: Vec<Value> = r
        .cells
        .iter()
        .map(
            |c| json!({"column": b64(&column_of(c)), "timestamp": c.timestamp, "$": b64(c.value())}),
        )
        .collect();
    let mut row = Map::new();
    row.insert("key".into(), Value::String(b64(r.row())));
    row.insert("Cell".into(), Value::Array(cells));
    Value::Object(row)
}

fn to_json(rows: &[RowResult]) -> Value {
    json!({ "Row": rows.iter().map(row_json).collect::<Vec<_>>() })
}

/// The XML of one row (`<Row key=..>..</Row>`), into `w`.
pub fn row_xml(w: &mut xml::Writer, r: &RowResult) {
    w.open("Row", &[("key", &b64(r.row()))]).open_end();
    for c in &r.cells {
        w.open(
            "Cell",
            &[
                ("column", &b64(&column_of(c))),
                ("timestamp", &c.timestamp.to_string()),
            ],
        )
        .open_end()
        .text(&b64(c.value()))
        .close("Cell");
    }
    w.close("Row");
}

fn to_xml(rows: &[RowResult]) -> String {
    let mut w = xml::Writer::new();
    w.open("CellSet", &[]).open_end();
    for r in rows {
        row_xml(&mut w, r);
    }
    w.close("CellSet");
    w.finish()
}

/// The protobuf of one row.
pub fn row_pb(r: &RowResult) -> pb::Row {
    pb::Row {
        key: Some(r.row_bytes()),
        values: r
            .cells
            .iter()
            .map(|c| pb::Cell {
                row: None,
                column: Some(column_of(c).into()),
                timestamp: Some(c.timestamp),
                data: Some(c.value_bytes()),
            })
            .collect(),
    }
}

fn to_pb(rows: &[RowResult]) -> pb::CellSet {
    pb::CellSet {
        rows: rows.iter().map(row_pb).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<RowResult> {
        let cells = vec![
            Cell::put(
                Bytes::from("r\0"),
                "cf",
                "a",
                5,
                Bytes::from_static(b"\xff\x00v"),
            ),
            Cell::put(Bytes::from("r\0"), "cf", "", 7, Bytes::new()),
        ];
        vec![RowResult::new(Bytes::from("r\0"), cells)]
    }

    fn back(format: Format) -> Vec<RowModel> {
        decode(format, &encode(format, &rows())).expect("decodes")
    }

    #[test]
    fn every_representation_round_trips_binary_keys_columns_and_values() {
        for f in [Format::Json, Format::Xml, Format::Protobuf] {
            let got = back(f);
            assert_eq!(got.len(), 1, "{f:?}");
            assert_eq!(got[0].key.as_deref(), Some(&b"r\0"[..]));
            assert_eq!(got[0].cells[0].column.as_deref(), Some(&b"cf:a"[..]));
            assert_eq!(got[0].cells[0].value.as_ref(), b"\xff\x00v");
            assert_eq!(got[0].cells[0].timestamp, 5);
            assert_eq!(got[0].cells[1].column.as_deref(), Some(&b"cf:"[..]));
            assert_eq!(got[0].cells[1].value.len(), 0);
        }
    }

    #[test]
    fn json_has_hbases_shape() {
        let v: Value = serde_json::from_slice(&encode(Format::Json, &rows())).expect("json");
        assert_eq!(v["Row"][0]["key"], "cgA=");
        assert_eq!(v["Row"][0]["Cell"][0]["column"], "Y2Y6YQ==");
        assert_eq!(v["Row"][0]["Cell"][0]["timestamp"], 5);
        assert_eq!(v["Row"][0]["Cell"][0]["$"], "/wB2");
    }

    #[test]
    fn a_cell_without_timestamp_key_or_column_is_left_to_the_path_and_clock() {
        let got = decode(Format::Json, br#"{"Row":{"Cell":{"$":"dg=="}}}"#).expect("lenient");
        assert_eq!(got[0].key, None);
        assert_eq!(got[0].cells[0].column, None);
        assert_eq!(got[0].cells[0].timestamp, LATEST_TIMESTAMP);
        let x = decode(
            Format::Xml,
            b"<CellSet><Row><Cell>dg==</Cell></Row></CellSet>",
        )
        .expect("xml");
        assert_eq!(x[0].cells[0].value.as_ref(), b"v");
    }

    #[test]
    fn malformed_bodies_are_400s() {
        for (f, body) in [
            (Format::Json, &b"{"[..]),
            (Format::Json, br#"{"Row":[{"key":"!!!"}]}"#),
            (Format::Json, br#"{"Row":[{"key":5}]}"#),
            (
                Format::Json,
                br#"{"Row":[{"Cell":[{"$":"dg==","timestamp":"soon"}]}]}"#,
            ),
            (Format::Json, b"[]"),
            (Format::Xml, b"<Other/>"),
            (Format::Xml, br#"<CellSet><Row key="%%"/></CellSet>"#),
            (Format::Protobuf, b"\x0a\xff\xff\xff"),
        ] {
            let e = decode(f, body).expect_err("refused");
            assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST, "{f:?} {e:?}");
        }
    }
}
