//! The answers that carry rows on the native API's hot path: a Get's row of ten 100-byte
//! columns (a YCSB record) framed by the server and decoded by the client.
//!
//! `cargo bench -p basalt-proto --bench rows`

use basalt_model::{Cell, RowResult};
use basalt_proto::rows::RowMessage;
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

criterion_group!(benches, answers);
criterion_main!(benches);
