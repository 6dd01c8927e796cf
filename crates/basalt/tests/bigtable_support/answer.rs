//! Requests sent and their answers, in a form two servers' answers can be compared in:
//! rows put together from their cell chunks, families in one order, and timestamps the
//! servers chose themselves named by the operation that wrote them.
//!
//! # Server times
//! A cell written at the server's time (SetCell at -1, ReadModifyWriteRow) has a timestamp
//! that differs between two servers. The runner records, for each server, the span of wall
//! time of every operation that may write one, and keeps those spans apart by more than a
//! millisecond (it waits between such operations), so every server-chosen timestamp lies in
//! exactly one span: [`Stamp::Written`] names that operation. The explicit timestamps of the
//! histories are far from any wall time, so they stay [`Stamp::At`], compared exactly.

use basalt_bigtable_proto::google::bigtable::v2;
use tonic::transport::Channel;
use tonic::Code;
use v2::bigtable_client::BigtableClient;

use super::ops::Op;

/// A cell's timestamp, as compared.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stamp {
    /// Given by the client: compared as is.
    At(i64),
    /// Chosen by the server while it served operation N of the history.
    Written(usize),
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cell {
    pub family: String,
    pub qualifier: Vec<u8>,
    pub ts: Stamp,
    pub value: Vec<u8>,
    pub labels: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub key: Vec<u8>,
    pub cells: Vec<Cell>,
}

/// What a server answered to one operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Done,
    /// MutateRows: each entry's status code, in entry order.
    Entries(Vec<Code>),
    Matched(bool),
    /// ReadModifyWriteRow: the cells it wrote.
    Written(Row),
    Rows(Vec<Row>),
    Failed(Code, Why),
}

/// An error's message: shown, never compared (the servers word their errors apart).
#[derive(Clone, Debug, Default)]
pub struct Why(pub String);

impl PartialEq for Why {
    fn eq(&self, _: &Why) -> bool {
        true
    }
}

impl Eq for Why {}

impl Answer {
    pub fn failed(code: Code) -> Answer {
        Answer::Failed(code, Why::default())
    }
}

/// The wall-time spans (microseconds) in which one server served operations that may write
/// at its own time.
#[derive(Debug, Default)]
pub struct ServerTimes {
    spans: Vec<(i64, i64, usize)>,
}

pub fn now_micros() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    i64::try_from(d.as_micros()).unwrap()
}

impl ServerTimes {
    /// Operation `op` was served between `start` and `end` (microseconds, read by the
    /// client before the request and after the answer).
    pub fn record(&mut self, op: usize, start: i64, end: i64) {
        // A server truncates its time to the millisecond.
        self.spans.push((start - start.rem_euclid(1000), end, op));
    }

    fn stamp(&self, ts: Stamp) -> Stamp {
        let Stamp::At(micros) = ts else { return ts };
        self.spans
            .iter()
            .find(|(lo, hi, _)| (*lo..=*hi).contains(&micros))
            .map_or(Stamp::At(micros), |s| Stamp::Written(s.2))
    }

    /// `answer` with the timestamps this server chose named by their operations.
    pub fn restamp(&self, answer: Answer) -> Answer {
        let row = |r: Row| {
            normalized(Row {
                key: r.key,
                cells: r
                    .cells
                    .into_iter()
                    .map(|c| Cell {
                        ts: self.stamp(c.ts),
                        ..c
                    })
                    .collect(),
            })
        };
        match answer {
            Answer::Rows(rows) => Answer::Rows(rows.into_iter().map(row).collect()),
            Answer::Written(r) => Answer::Written(row(r)),
            other => other,
        }
    }
}

/// Rows from ReadRows' responses, put together from their chunks.
#[derive(Debug, Default)]
pub struct RowMerger {
    pub rows: Vec<Row>,
    key: Vec<u8>,
    family: String,
    qualifier: Vec<u8>,
    cells: Vec<Cell>,
    /// A cell whose value continues in the next chunk.
    partial: Option<Cell>,
}

impl RowMerger {
    pub fn push(&mut self, chunk: v2::read_rows_response::CellChunk) {
        use v2::read_rows_response::cell_chunk::RowStatus;
        if matches!(chunk.row_status, Some(RowStatus::ResetRow(true))) {
            *self = RowMerger {
                rows: std::mem::take(&mut self.rows),
                ..RowMerger::default()
            };
            return;
        }
        if !chunk.row_key.is_empty() {
            self.key = chunk.row_key.to_vec();
        }
        if let Some(f) = chunk.family_name {
            self.family = f;
        }
        if let Some(q) = chunk.qualifier {
            self.qualifier = q;
        }
        let mut cell = self.partial.take().unwrap_or_else(|| Cell {
            family: self.family.clone(),
            qualifier: self.qualifier.clone(),
            ts: Stamp::At(chunk.timestamp_micros),
            value: Vec::new(),
            labels: chunk.labels.clone(),
        });
        cell.value.extend_from_slice(&chunk.value);
        if chunk.value_size > 0 {
            self.partial = Some(cell);
        } else {
            self.cells.push(cell);
        }
        if matches!(chunk.row_status, Some(RowStatus::CommitRow(true))) {
            assert!(self.partial.is_none(), "a row committed inside a cell");
            self.rows.push(normalized(Row {
                key: std::mem::take(&mut self.key),
                cells: std::mem::take(&mut self.cells),
            }));
        }
    }
}

/// ReadModifyWriteRow's row, as compared.
pub fn written_row(row: v2::Row) -> Row {
    let mut cells = Vec::new();
    for f in row.families {
        for c in f.columns {
            for cell in c.cells {
                cells.push(Cell {
                    family: f.name.clone(),
                    qualifier: c.qualifier.to_vec(),
                    ts: Stamp::At(cell.timestamp_micros),
                    value: cell.value.to_vec(),
                    labels: cell.labels,
                });
            }
        }
    }
    normalized(Row {
        key: row.key.to_vec(),
        cells,
    })
}

/// A row in the one order both servers must agree on. Bigtable leaves two orders open: the
/// families of a row ("the mutual ordering of column families is not specified"; the
/// emulator gives them in creation order, Basalt by name), and cells an interleave or a
/// sink duplicates at one column and timestamp ("an unspecified mutual order"). Both are
/// sorted here; the order of qualifiers and timestamps within a family is kept as the
/// server sent it, so a server that gets it wrong is caught.
pub fn normalized(mut row: Row) -> Row {
    row.cells.sort_by(|a, b| a.family.cmp(&b.family));
    let mut start = 0;
    while start < row.cells.len() {
        let head = &row.cells[start];
        let same =
            |c: &Cell| c.family == head.family && c.qualifier == head.qualifier && c.ts == head.ts;
        let len = row.cells[start..].iter().take_while(|c| same(c)).count();
        row.cells[start..start + len]
            .sort_by(|a, b| (&a.value, &a.labels).cmp(&(&b.value, &b.labels)));
        start += len;
    }
    row
}

/// An answer for a message: keys, qualifiers and values as text where they are.
pub fn show(a: &Answer) -> String {
    match a {
        Answer::Rows(rows) => rows.iter().map(show_row).collect::<Vec<_>>().join("\n"),
        Answer::Written(row) => format!("written {}", show_row(row)),
        Answer::Failed(code, why) => format!("Failed({code:?}: {})", why.0),
        other => format!("{other:?}"),
    }
}

fn show_row(r: &Row) -> String {
    let cells: Vec<String> = r
        .cells
        .iter()
        .map(|c| {
            let ts = match c.ts {
                Stamp::At(t) => t.to_string(),
                Stamp::Written(op) => format!("now#{op}"),
            };
            let labels = if c.labels.is_empty() {
                String::new()
            } else {
                format!(" {:?}", c.labels)
            };
            format!(
                "{}:{}@{ts}={:?}{labels}",
                c.family,
                String::from_utf8_lossy(&c.qualifier),
                String::from_utf8_lossy(&c.value)
            )
        })
        .collect();
    format!("{} [{}]", String::from_utf8_lossy(&r.key), cells.join(", "))
}

/// The emulator serves reversed scans only to clients that say they support them, in the
/// `bigtable-features` header (FeatureFlags with reverse_scans = true, base64url); Basalt
/// ignores the header.
fn with_features<T>(message: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(message);
    r.metadata_mut()
        .insert("bigtable-features", "CAE=".parse().unwrap());
    r
}

/// Sends `op` and returns the answer, its timestamps as the server sent them.
pub async fn execute(c: &mut BigtableClient<Channel>, op: Op) -> Answer {
    let failed = |s: tonic::Status| Answer::Failed(s.code(), Why(s.message().to_owned()));
    match op {
        Op::MutateRow(r) => c.mutate_row(r).await.map_or_else(failed, |_| Answer::Done),
        Op::MutateRows(r) => match c.mutate_rows(r).await {
            Err(s) => failed(s),
            Ok(stream) => {
                let mut stream = stream.into_inner();
                // Entries may come in any order and over several responses.
                let mut codes = Vec::new();
                loop {
                    match stream.message().await {
                        Ok(Some(m)) => codes.extend(m.entries.iter().map(|e| {
                            (e.index, Code::from(e.status.as_ref().map_or(0, |s| s.code)))
                        })),
                        Ok(None) => {
                            codes.sort_by_key(|c| c.0);
                            break Answer::Entries(codes.into_iter().map(|c| c.1).collect());
                        }
                        Err(s) => break failed(s),
                    }
                }
            }
        },
        Op::CheckAndMutate(r) => c.check_and_mutate_row(r).await.map_or_else(failed, |a| {
            Answer::Matched(a.into_inner().predicate_matched)
        }),
        Op::ReadModifyWrite(r) => c.read_modify_write_row(r).await.map_or_else(failed, |a| {
            Answer::Written(written_row(a.into_inner().row.unwrap_or_default()))
        }),
        Op::ReadRows(r) => match c.read_rows(with_features(r)).await {
            Err(s) => failed(s),
            Ok(stream) => {
                let mut stream = stream.into_inner();
                let mut merger = RowMerger::default();
                loop {
                    match stream.message().await {
                        Ok(Some(m)) => m.chunks.into_iter().for_each(|c| merger.push(c)),
                        Ok(None) => break Answer::Rows(merger.rows),
                        Err(s) => break failed(s),
                    }
                }
            }
        },
    }
}
