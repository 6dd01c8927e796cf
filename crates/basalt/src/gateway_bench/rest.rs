//! The benchmark's REST client: hyper's HTTP/1.1 client on one kept-alive connection,
//! speaking HBase REST's JSON or protobuf representation the way its clients do.

use anyhow::Context;
use basalt_server::rest::pb;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, LOCATION};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use prost::Message;
use serde_json::{json, Value};

use super::GatewayClient;

/// The representation a client sends and asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestFormat {
    Json,
    Protobuf,
}

impl RestFormat {
    fn media_type(self) -> &'static str {
        match self {
            RestFormat::Json => "application/json",
            RestFormat::Protobuf => "application/x-protobuf",
        }
    }
}

/// One kept-alive connection to a REST gateway, driven by a runtime of its own on the
/// calling thread.
pub struct RestClient {
    runtime: tokio::runtime::Runtime,
    sender: SendRequest<Full<Bytes>>,
    host: String,
    table: String,
    format: RestFormat,
    /// Cells in each of the table's rows, so a scanner's page (counted in cells) is whole rows.
    row_cells: u32,
}

/// A status, the `Location` header if any, and the body.
type Answer = (StatusCode, Option<String>, Bytes);

impl RestClient {
    /// Connects to the gateway at `addr`; rows of `row_cells` cells are read and written in
    /// `table`.
    pub fn connect(
        addr: &str,
        table: &str,
        format: RestFormat,
        row_cells: u32,
    ) -> anyhow::Result<RestClient> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let sender = runtime
            .block_on(async {
                let stream = tokio::net::TcpStream::connect(addr).await?;
                stream.set_nodelay(true)?;
                let (sender, connection) =
                    hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
                // The connection's own task; its failure shows as the next request's error.
                tokio::spawn(connection);
                anyhow::Ok(sender)
            })
            .with_context(|| format!("connecting to {addr}"))?;
        Ok(RestClient {
            runtime,
            sender,
            host: addr.to_owned(),
            table: table.to_owned(),
            format,
            row_cells,
        })
    }

    /// One request on the connection, its body read whole.
    fn call(&mut self, method: Method, path: &str, body: Option<Bytes>) -> anyhow::Result<Answer> {
        let media = self.format.media_type();
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, &self.host)
            .header(ACCEPT, media);
        if body.is_some() {
            request = request.header(CONTENT_TYPE, media);
        }
        let request = request.body(Full::new(body.unwrap_or_default()))?;
        let sender = &mut self.sender;
        self.runtime.block_on(async {
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            let status = response.status();
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(str::to_owned);
            let body = response.into_body().collect().await?.to_bytes();
            Ok((status, location, body))
        })
    }

    /// `call`, failing unless the answer has status `want`.
    fn expect(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        want: StatusCode,
    ) -> anyhow::Result<Answer> {
        let what = format!("{method} {path}");
        let answer = self.call(method, path, body)?;
        anyhow::ensure!(
            answer.0 == want,
            "{what} answered {}: {}",
            answer.0,
            String::from_utf8_lossy(&answer.2)
        );
        Ok(answer)
    }

    fn cell_set(&self, row: &[u8], cells: &[(Vec<u8>, Vec<u8>)]) -> Bytes {
        match self.format {
            RestFormat::Json => {
                let cells: Vec<Value> = cells
                    .iter()
                    .map(|(c, v)| json!({"column": STANDARD.encode(c), "$": STANDARD.encode(v)}))
                    .collect();
                let set = json!({"Row": [{"key": STANDARD.encode(row), "Cell": cells}]});
                Bytes::from(set.to_string())
            }
            RestFormat::Protobuf => {
                let values = cells
                    .iter()
                    .map(|(c, v)| pb::Cell {
                        column: Some(Bytes::copy_from_slice(c)),
                        data: Some(Bytes::copy_from_slice(v)),
                        ..pb::Cell::default()
                    })
                    .collect();
                let row = pb::Row {
                    key: Some(Bytes::copy_from_slice(row)),
                    values,
                };
                Bytes::from(pb::CellSet { rows: vec![row] }.encode_to_vec())
            }
        }
    }

    /// A CellSet body's rows: each key and how many cells it carries.
    fn rows_of(&self, body: &[u8]) -> anyhow::Result<Vec<(Vec<u8>, usize)>> {
        match self.format {
            RestFormat::Json => {
                let v: Value = serde_json::from_slice(body)?;
                let rows = v["Row"].as_array().context("a CellSet without Row")?;
                rows.iter()
                    .map(|r| {
                        let key = r["key"].as_str().context("a Row without a key")?;
                        let cells = r["Cell"].as_array().map_or(0, Vec::len);
                        Ok((STANDARD.decode(key)?, cells))
                    })
                    .collect()
            }
            RestFormat::Protobuf => Ok(pb::CellSet::decode(body)?
                .rows
                .into_iter()
                .map(|r| (r.key.unwrap_or_default().to_vec(), r.values.len()))
                .collect()),
        }
    }

    fn scanner_spec(&self, start: &[u8], stop: &[u8], batch: i32) -> Bytes {
        match self.format {
            RestFormat::Json => Bytes::from(
                json!({
                    "startRow": STANDARD.encode(start),
                    "endRow": STANDARD.encode(stop),
                    "batch": batch,
                })
                .to_string(),
            ),
            RestFormat::Protobuf => Bytes::from(
                pb::Scanner {
                    start_row: Some(Bytes::copy_from_slice(start)),
                    end_row: Some(Bytes::copy_from_slice(stop)),
                    batch: Some(batch),
                    ..pb::Scanner::default()
                }
                .encode_to_vec(),
            ),
        }
    }
}

/// A row key as a path segment. The benchmark's keys are printable ASCII letters and
/// digits; anything else is escaped.
fn path_segment(row: &[u8]) -> String {
    row.iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

impl GatewayClient for RestClient {
    fn put(&mut self, row: &[u8], cells: &[(Vec<u8>, Vec<u8>)]) -> anyhow::Result<()> {
        let path = format!("/{}/{}", self.table, path_segment(row));
        let body = self.cell_set(row, cells);
        self.expect(Method::PUT, &path, Some(body), StatusCode::OK)?;
        Ok(())
    }

    fn get(&mut self, row: &[u8]) -> anyhow::Result<usize> {
        let path = format!("/{}/{}", self.table, path_segment(row));
        let (_, _, body) = self.expect(Method::GET, &path, None, StatusCode::OK)?;
        let rows = self.rows_of(&body)?;
        anyhow::ensure!(
            rows.len() == 1 && rows[0].0 == row,
            "GET {path} answered other rows"
        );
        Ok(rows[0].1)
    }

    fn scan(&mut self, start: &[u8], stop: &[u8], page_rows: u32) -> anyhow::Result<u64> {
        // A page of `page_rows` whole rows: the spec's batch counts cells.
        let batch = i32::try_from(u64::from(page_rows) * u64::from(self.row_cells))?;
        let spec = self.scanner_spec(start, stop, batch);
        let path = format!("/{}/scanner", self.table);
        let (_, location, _) = self.expect(Method::POST, &path, Some(spec), StatusCode::CREATED)?;
        let location = location.context("a scanner made without a Location")?;
        let uri: hyper::Uri = location.parse()?;
        let scanner = uri.path().to_owned();
        let (mut rows, mut last) = (0, None::<Vec<u8>>);
        loop {
            let (status, _, body) = self.call(Method::GET, &scanner, None)?;
            match status {
                StatusCode::NO_CONTENT => break,
                StatusCode::OK => {}
                other => anyhow::bail!("GET {scanner} answered {other}"),
            }
            for (key, _) in self.rows_of(&body)? {
                // A row cut by a page boundary continues on the next page.
                if last.as_ref() != Some(&key) {
                    rows += 1;
                    last = Some(key);
                }
            }
        }
        self.expect(Method::DELETE, &scanner, None, StatusCode::OK)?;
        Ok(rows)
    }
}
