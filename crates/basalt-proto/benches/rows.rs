//! The answers that carry rows on the native API's hot path: a Get's row of ten 100-byte
//! columns (a YCSB record) framed by the server and decoded by the client, and a scanner
//! call's answer of 100 such rows, encoded from the rows collected or as they are read.
//!
//! `cargo bench -p basalt-proto --bench rows`

use basalt_model::{Cell, RowResult};
use basalt_proto::rows::{EncodedRows, RowMessage, ScannedRows};
use basalt_proto::unary::{frame, unframe};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use prost::Message;

/// A YCSB record as a Get answers it: ten columns of one family, 100-byte values, each cell
/// with its timestamp and sequence id.
fn ycsb_row() -> RowResult {
    let row = bytes::Bytes::from_static(b"user6284781860667377211");
    let cells = (0..10)
        .map(|i| {
            let mut c = Cell::put(
                row.clone(),
                "family",
                format!("field{i}"),
                1_764_201_600_000 + i,
                vec![b'v'; 100],
            );
            c.seq_id = 1_000_000 + u64::try_from(i).expect("small");
            c
        })
        .collect();
    RowResult::new(row, cells)
}

fn answers(c: &mut Criterion) {
    let row = RowMessage(ycsb_row());
    let framed = frame(&row, 4 << 20).expect("frames");
    let decoded = RowMessage::decode(unframe(&framed).expect("unframes")).expect("decodes");
    assert_eq!(decoded.0.cells.len(), 10);
    assert_eq!(decoded.0.cells[9].value().len(), 100);
    c.bench_function("rows/frame_a_ycsb_row", |b| {
        b.iter(|| frame(black_box(&row), 4 << 20).expect("frames"));
    });
    c.bench_function("rows/decode_a_ycsb_row", |b| {
        b.iter(|| {
            RowMessage::decode(unframe(black_box(&framed)).expect("unframes")).expect("decodes")
        });
    });
}

/// A scanner call's answer of 100 YCSB rows: collected into results and then encoded, as
/// the server answered before, or each row encoded as the scanner reads it into one vector.
fn scan_answers(c: &mut Criterion) {
    let row = ycsb_row();
    let rows = vec![row.clone(); 100];
    let collected = ScannedRows {
        results: rows.clone(),
        ..ScannedRows::default()
    };
    let as_read = || {
        let mut encoded = EncodedRows::default();
        for r in &rows {
            encoded.push(black_box(&r.cells), false);
        }
        ScannedRows {
            encoded,
            ..ScannedRows::default()
        }
    };
    let framed = frame(&as_read(), 4 << 20).expect("frames");
    assert_eq!(framed, frame(&collected, 4 << 20).expect("frames"));
    c.bench_function("rows/frame_100_rows_collected", |b| {
        b.iter(|| frame(black_box(&collected), 4 << 20).expect("frames"));
    });
    c.bench_function("rows/frame_100_rows_encoded_as_read", |b| {
        b.iter(|| frame(&as_read(), 4 << 20).expect("frames"));
    });
}

criterion_group!(benches, answers, scan_answers);
criterion_main!(benches);
