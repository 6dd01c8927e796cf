#![allow(clippy::unwrap_used)]

use std::io::Cursor;

use proptest::prelude::*;
use thrift::protocol::{
    TBinaryOutputProtocol, TCompactOutputProtocol, TFieldIdentifier, TListIdentifier,
    TMapIdentifier, TMessageIdentifier, TOutputProtocol, TSetIdentifier, TStructIdentifier,
};

use super::*;
use crate::thrift::stand_in::take_absent_arguments;

fn field(t: TType, id: i16) -> TFieldIdentifier {
    TFieldIdentifier::new::<Option<String>, String, Option<i16>>(None, t, Some(id))
}

/// One message with a field of every type, written by the `thrift` crate's own encoder.
fn write_sample(o: &mut dyn TOutputProtocol) {
    o.write_message_begin(&TMessageIdentifier::new("getRow", TMessageType::Call, 7))
        .unwrap();
    o.write_struct_begin(&TStructIdentifier::new("args"))
        .unwrap();
    o.write_field_begin(&field(TType::Bool, 1)).unwrap();
    o.write_bool(true).unwrap();
    o.write_field_begin(&field(TType::Bool, 2)).unwrap();
    o.write_bool(false).unwrap();
    o.write_field_begin(&field(TType::I08, 3)).unwrap();
    o.write_i8(-5).unwrap();
    o.write_field_begin(&field(TType::I16, 4)).unwrap();
    o.write_i16(-300).unwrap();
    o.write_field_begin(&field(TType::I32, 20)).unwrap(); // a jump past the delta range
    o.write_i32(-70_000).unwrap();
    o.write_field_begin(&field(TType::I64, 21)).unwrap();
    o.write_i64(i64::MIN + 3).unwrap();
    o.write_field_begin(&field(TType::Double, 22)).unwrap();
    o.write_double(2.5).unwrap();
    o.write_field_begin(&field(TType::String, 23)).unwrap();
    o.write_bytes(b"\x00\xffrow").unwrap();
    o.write_field_begin(&field(TType::List, 24)).unwrap();
    o.write_list_begin(&TListIdentifier::new(TType::String, 2))
        .unwrap();
    o.write_string("a").unwrap();
    o.write_string("bc").unwrap();
    o.write_list_end().unwrap();
    o.write_field_begin(&field(TType::Set, 25)).unwrap();
    o.write_set_begin(&TSetIdentifier::new(TType::Bool, 2))
        .unwrap();
    o.write_bool(true).unwrap();
    o.write_bool(false).unwrap();
    o.write_set_end().unwrap();
    o.write_field_begin(&field(TType::Map, 26)).unwrap();
    o.write_map_begin(&TMapIdentifier::new(TType::String, TType::I64, 1))
        .unwrap();
    o.write_string("k").unwrap();
    o.write_i64(9).unwrap();
    o.write_map_end().unwrap();
    o.write_field_begin(&field(TType::Struct, 27)).unwrap();
    o.write_struct_begin(&TStructIdentifier::new("inner"))
        .unwrap();
    o.write_field_begin(&field(TType::I32, 1)).unwrap();
    o.write_i32(42).unwrap();
    o.write_field_stop().unwrap();
    o.write_struct_end().unwrap();
    o.write_field_begin(&field(TType::Map, 28)).unwrap();
    o.write_map_begin(&TMapIdentifier::new(TType::String, TType::String, 0))
        .unwrap();
    o.write_map_end().unwrap();
    o.write_field_stop().unwrap();
    o.write_struct_end().unwrap();
    o.write_message_end().unwrap();
    o.flush().unwrap();
}

fn encoded(encoding: Encoding) -> Vec<u8> {
    let mut buf = Vec::new();
    match encoding {
        Encoding::Binary => write_sample(&mut TBinaryOutputProtocol::new(&mut buf, true)),
        Encoding::Compact => write_sample(&mut TCompactOutputProtocol::new(&mut buf)),
    }
    buf
}

fn reader(bytes: Vec<u8>, encoding: Encoding) -> InputProtocol<Cursor<Vec<u8>>> {
    let len = bytes.len();
    InputProtocol::new(Cursor::new(bytes), encoding, len)
}

fn expect_field(i: &mut InputProtocol<Cursor<Vec<u8>>>, t: TType, id: i16) {
    let f = i.read_field_begin().unwrap();
    assert_eq!((f.field_type, f.id), (t, Some(id)));
}

fn read_sample(i: &mut InputProtocol<Cursor<Vec<u8>>>) {
    let m = i.read_message_begin().unwrap();
    assert_eq!(
        (m.name.as_str(), m.message_type, m.sequence_number),
        ("getRow", TMessageType::Call, 7)
    );
    i.read_struct_begin().unwrap();
    expect_field(i, TType::Bool, 1);
    assert!(i.read_bool().unwrap());
    expect_field(i, TType::Bool, 2);
    assert!(!i.read_bool().unwrap());
    expect_field(i, TType::I08, 3);
    assert_eq!(i.read_i8().unwrap(), -5);
    expect_field(i, TType::I16, 4);
    assert_eq!(i.read_i16().unwrap(), -300);
    expect_field(i, TType::I32, 20);
    assert_eq!(i.read_i32().unwrap(), -70_000);
    expect_field(i, TType::I64, 21);
    assert_eq!(i.read_i64().unwrap(), i64::MIN + 3);
    expect_field(i, TType::Double, 22);
    assert!((i.read_double().unwrap() - 2.5).abs() < f64::EPSILON);
    expect_field(i, TType::String, 23);
    assert_eq!(i.read_bytes().unwrap(), b"\x00\xffrow");
    expect_field(i, TType::List, 24);
    let l = i.read_list_begin().unwrap();
    assert_eq!((l.element_type, l.size), (TType::String, 2));
    assert_eq!(
        [i.read_string().unwrap(), i.read_string().unwrap()],
        ["a", "bc"]
    );
    i.read_list_end().unwrap();
    expect_field(i, TType::Set, 25);
    let s = i.read_set_begin().unwrap();
    assert_eq!((s.element_type, s.size), (TType::Bool, 2));
    assert_eq!(
        [i.read_bool().unwrap(), i.read_bool().unwrap()],
        [true, false]
    );
    expect_field(i, TType::Map, 26);
    let m = i.read_map_begin().unwrap();
    assert_eq!(
        (m.key_type, m.value_type, m.size),
        (Some(TType::String), Some(TType::I64), 1)
    );
    assert_eq!(
        (i.read_string().unwrap(), i.read_i64().unwrap()),
        ("k".to_owned(), 9)
    );
    expect_field(i, TType::Struct, 27);
    i.read_struct_begin().unwrap();
    expect_field(i, TType::I32, 1);
    assert_eq!(i.read_i32().unwrap(), 42);
    assert_eq!(i.read_field_begin().unwrap().field_type, TType::Stop);
    i.read_struct_end().unwrap();
    expect_field(i, TType::Map, 28);
    assert_eq!(i.read_map_begin().unwrap().size, 0);
    assert_eq!(i.read_field_begin().unwrap().field_type, TType::Stop);
    i.read_struct_end().unwrap();
    assert_eq!(i.failure(), None);
    assert_eq!(i.consumed(), i.limit, "the whole message and nothing more");
}

#[test]
fn reads_what_the_thrift_crate_writes_in_both_encodings() {
    for e in [Encoding::Binary, Encoding::Compact] {
        let mut i = reader(encoded(e), e);
        read_sample(&mut i);
        assert_eq!(i.method(), "getRow");
    }
}

#[test]
fn the_old_non_strict_binary_header_is_read_too() {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&6i32.to_be_bytes());
    bytes.extend_from_slice(b"getRow");
    bytes.push(1); // Call
    bytes.extend_from_slice(&7i32.to_be_bytes());
    let strict = encoded(Encoding::Binary);
    // The strict header is 4 + 4 + 6 + 4 bytes; the rest is the same.
    bytes.extend_from_slice(&strict[18..]);
    read_sample(&mut reader(bytes, Encoding::Binary));
}

/// A binary message whose arguments struct starts with `field` (type byte and id), then
/// `tail`.
fn binary_args(field_type: u8, tail: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0x8001_0001u32.to_be_bytes());
    b.extend_from_slice(&6i32.to_be_bytes());
    b.extend_from_slice(b"getRow");
    b.extend_from_slice(&1i32.to_be_bytes());
    b.push(field_type);
    b.extend_from_slice(&1i16.to_be_bytes());
    b.extend_from_slice(tail);
    b
}

fn first_field_fails(
    bytes: Vec<u8>,
    e: Encoding,
    read: fn(&mut InputProtocol<Cursor<Vec<u8>>>) -> bool,
) -> String {
    let mut i = reader(bytes, e);
    i.read_message_begin().unwrap();
    i.read_struct_begin().unwrap();
    i.read_field_begin().unwrap();
    assert!(!read(&mut i), "the read must fail");
    i.failure().unwrap().to_owned()
}

#[test]
fn lengths_that_do_not_fit_the_request_are_refused_before_any_allocation() {
    let string = |i: &mut InputProtocol<Cursor<Vec<u8>>>| i.read_bytes().is_ok();
    let list = |i: &mut InputProtocol<Cursor<Vec<u8>>>| i.read_list_begin().is_ok();
    let map = |i: &mut InputProtocol<Cursor<Vec<u8>>>| i.read_map_begin().is_ok();
    let why = first_field_fails(
        binary_args(11, &(-1i32).to_be_bytes()),
        Encoding::Binary,
        string,
    );
    assert!(why.contains("length -1"), "{why}");
    let why = first_field_fails(
        binary_args(11, &i32::MAX.to_be_bytes()),
        Encoding::Binary,
        string,
    );
    assert!(why.contains("does not fit"), "{why}");
    let mut huge_list = vec![12u8];
    huge_list.extend_from_slice(&0x7fff_ffffi32.to_be_bytes());
    let why = first_field_fails(binary_args(15, &huge_list), Encoding::Binary, list);
    assert!(why.contains("list of length 2147483647"), "{why}");
    let mut negative_map = vec![11u8, 11];
    negative_map.extend_from_slice(&(-5i32).to_be_bytes());
    let why = first_field_fails(binary_args(13, &negative_map), Encoding::Binary, map);
    assert!(why.contains("map of length -5"), "{why}");
    // A string cut short by the end of the request.
    let mut short = 10i32.to_be_bytes().to_vec();
    short.extend_from_slice(b"abc");
    let why = first_field_fails(binary_args(11, &short), Encoding::Binary, string);
    assert!(why.contains("does not fit"), "{why}");
}

#[test]
fn a_buffered_request_longer_than_the_limit_is_refused() {
    let bytes = encoded(Encoding::Compact);
    let mut i = InputProtocol::new(Cursor::new(bytes), Encoding::Compact, 20);
    i.read_message_begin().unwrap();
    i.read_struct_begin().unwrap();
    let mut failed = false;
    for _ in 0..20 {
        match i.read_field_begin() {
            Ok(f) if f.field_type == TType::Stop => break,
            Ok(f) => {
                if i.skip(f.field_type).is_err() {
                    failed = true;
                    break;
                }
            }
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(failed);
    assert!(
        i.failure().unwrap().contains("limit of 20 bytes"),
        "{:?}",
        i.failure()
    );
}

/// Reads any value of type `t` as text: structs as `{id: value, ...}`, lists as `[...]`.
fn walk(i: &mut InputProtocol<Cursor<Vec<u8>>>, t: TType) -> String {
    match t {
        TType::Bool => i.read_bool().unwrap().to_string(),
        TType::I32 => i.read_i32().unwrap().to_string(),
        TType::I64 => i.read_i64().unwrap().to_string(),
        TType::String => format!("{:?}", String::from_utf8_lossy(&i.read_bytes().unwrap())),
        TType::List => {
            let l = i.read_list_begin().unwrap();
            let items: Vec<String> = (0..l.size).map(|_| walk(i, l.element_type)).collect();
            format!("[{}]", items.join(", "))
        }
        TType::Map => {
            let m = i.read_map_begin().unwrap();
            let items: Vec<String> = (0..m.size)
                .map(|_| {
                    let k = walk(i, m.key_type.unwrap());
                    format!("{k}: {}", walk(i, m.value_type.unwrap()))
                })
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        TType::Struct => {
            i.read_struct_begin().unwrap();
            let mut fields = Vec::new();
            loop {
                let f = i.read_field_begin().unwrap();
                if f.field_type == TType::Stop {
                    break;
                }
                fields.push(format!("{}: {}", f.id.unwrap(), walk(i, f.field_type)));
            }
            i.read_struct_end().unwrap();
            format!("{{{}}}", fields.join(", "))
        }
        t => panic!("unexpected {t:?}"),
    }
}

/// A compact message `method` whose arguments `write_args` writes, read back as text.
fn arguments_as_read(method: &str, write_args: impl Fn(&mut dyn TOutputProtocol)) -> String {
    let mut buf = Vec::new();
    {
        let mut o = TCompactOutputProtocol::new(&mut buf);
        o.write_message_begin(&TMessageIdentifier::new(method, TMessageType::Call, 1))
            .unwrap();
        o.write_struct_begin(&TStructIdentifier::new("args"))
            .unwrap();
        write_args(&mut o);
        o.write_field_stop().unwrap();
        o.write_struct_end().unwrap();
        o.flush().unwrap();
    }
    let mut i = reader(buf, Encoding::Compact);
    i.begin(i.limit);
    i.read_message_begin().unwrap();
    walk(&mut i, TType::Struct)
}

fn struct_of(o: &mut dyn TOutputProtocol, fields: &[(i16, &str)]) {
    o.write_struct_begin(&TStructIdentifier::new("s")).unwrap();
    for (id, text) in fields {
        o.write_field_begin(&field(TType::String, *id)).unwrap();
        o.write_bytes(text.as_bytes()).unwrap();
    }
    o.write_field_stop().unwrap();
    o.write_struct_end().unwrap();
}

#[test]
fn struct_fields_left_out_get_the_idl_defaults() {
    // mutateRows(table, [BatchMutation(row, [Mutation(column, value)])]) without writeToWAL
    // (nor attributes): the write goes to the WAL, as HBase's IDL default says.
    let read = arguments_as_read("mutateRows", |o| {
        o.write_field_begin(&field(TType::String, 1)).unwrap();
        o.write_bytes(b"t").unwrap();
        o.write_field_begin(&field(TType::List, 2)).unwrap();
        o.write_list_begin(&TListIdentifier::new(TType::Struct, 1))
            .unwrap();
        o.write_struct_begin(&TStructIdentifier::new("BatchMutation"))
            .unwrap();
        o.write_field_begin(&field(TType::String, 1)).unwrap();
        o.write_bytes(b"r").unwrap();
        o.write_field_begin(&field(TType::List, 2)).unwrap();
        o.write_list_begin(&TListIdentifier::new(TType::Struct, 2))
            .unwrap();
        struct_of(o, &[(2, "cf:a"), (3, "v")]);
        o.write_struct_begin(&TStructIdentifier::new("Mutation"))
            .unwrap();
        o.write_field_begin(&field(TType::Bool, 4)).unwrap();
        o.write_bool(false).unwrap();
        o.write_field_stop().unwrap();
        o.write_struct_end().unwrap();
        o.write_list_end().unwrap();
        o.write_field_stop().unwrap();
        o.write_struct_end().unwrap();
        o.write_list_end().unwrap();
    });
    assert_eq!(
        read,
        r#"{1: "t", 2: [{1: "r", 2: [{2: "cf:a", 3: "v", 4: true}, {4: false}]}], 3: {}}"#
    );
    // createTable(name, [ColumnDescriptor(name)]): 3 versions, no compression, no bloom
    // filter, kept forever.
    let read = arguments_as_read("createTable", |o| {
        o.write_field_begin(&field(TType::String, 1)).unwrap();
        o.write_bytes(b"t").unwrap();
        o.write_field_begin(&field(TType::List, 2)).unwrap();
        o.write_list_begin(&TListIdentifier::new(TType::Struct, 1))
            .unwrap();
        struct_of(o, &[(1, "cf:")]);
        o.write_list_end().unwrap();
    });
    assert_eq!(
        read,
        r#"{1: "t", 2: [{1: "cf:", 2: 3, 3: "NONE", 5: "NONE", 9: 2147483647}]}"#
    );
    // A struct argument left out stands in empty, with its defaults: checkAndPut's mput.
    let read = arguments_as_read("checkAndPut", |o| {
        for id in 1..=3 {
            o.write_field_begin(&field(TType::String, id)).unwrap();
            o.write_bytes(b"x").unwrap();
        }
    });
    assert_eq!(
        read,
        r#"{1: "x", 2: "x", 3: "x", 5: "", 6: {4: true}, 7: {}}"#
    );
    assert_eq!(take_absent_arguments(), 1 << 5 | 1 << 6 | 1 << 7);
}

/// Reads a message of any shape, skipping its arguments; never panics.
fn read_anything(bytes: Vec<u8>, e: Encoding) {
    let mut i = reader(bytes, e);
    if i.read_message_begin().is_ok() {
        let _ = i.skip(TType::Struct);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        read_anything(bytes.clone(), Encoding::Binary);
        read_anything(bytes, Encoding::Compact);
    }

    #[test]
    fn corrupted_messages_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6)) {
        for e in [Encoding::Binary, Encoding::Compact] {
            let mut bytes = encoded(e);
            for (at, b) in &flips {
                let n = bytes.len();
                bytes[at % n] = *b;
            }
            read_anything(bytes, e);
        }
    }
}
