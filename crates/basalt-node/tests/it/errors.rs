//! SEMANTICS.md §J and issue 2's bad-input list: a precise error, nothing applied, the
//! database still healthy.

use basalt_model::ops::{Get, Put, RowMutations, Scan};
use basalt_model::{Error, TableName};

use super::support::*;

/// SEMANTICS.md #72 (empty put), #73 (cell size), #74 (row length), #75 (unknown family),
/// #77 (negative timestamp), #79 (a failed row mutation applies nothing).
#[test]
fn bad_writes_are_refused_whole() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1)]);
    // unknown family in the middle of a put: nothing of the row is applied
    let e = t
        .put(Put::new("r").add("f", "a", "1").add("nope", "b", "2"))
        .unwrap_err();
    assert!(matches!(e, Error::NoSuchColumnFamily { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "Column family nope does not exist in table t"
    );
    // oversized cell (10 MiB default)
    let e = t
        .put(
            Put::new("r")
                .add("f", "a", "1")
                .add("f", "big", vec![0u8; 10 * 1024 * 1024 + 1]),
        )
        .unwrap_err();
    assert!(e.to_string().starts_with("KeyValue size too large"), "{e}");
    assert!(t.get(Get::new("r")).unwrap().is_empty());
    // rows
    assert_eq!(
        t.put(Put::new("").add("f", "a", "1"))
            .unwrap_err()
            .to_string(),
        "Row length is 0"
    );
    assert_eq!(
        t.put(Put::new(vec![b'x'; 32768]).add("f", "a", "1"))
            .unwrap_err()
            .to_string(),
        "Row length 32768 is > 32767"
    );
    assert!(t
        .put(Put::new(vec![b'x'; 32767]).add("f", "a", "1"))
        .is_ok());
    // empty put, negative timestamp
    assert_eq!(
        t.put(Put::new("r")).unwrap_err().to_string(),
        "No columns to insert"
    );
    assert!(matches!(
        t.put(Put::new("r").add_at("f", "a", -1, "v")),
        Err(Error::IllegalArgument(_))
    ));
    // a RowMutations with one bad mutation applies nothing
    let mut rm = RowMutations::new("m");
    rm.add(Put::new("m").add("f", "a", "1")).unwrap();
    rm.add(Put::new("m").add("zz", "a", "1")).unwrap();
    assert!(t.mutate_row(rm).is_err());
    assert!(t.get(Get::new("m")).unwrap().is_empty());
    // still healthy
    t.put(Put::new("ok").add("f", "a", "1")).unwrap();
    assert!(!t.get(Get::new("ok")).unwrap().is_empty());
}

/// SEMANTICS.md #37, #53 (batch with a row filter), §4.4 namespace errors, drop of an enabled table.
#[test]
fn admin_errors_use_hbase_exceptions() {
    let fx = Fixture::new();
    let name = TableName::parse("t").unwrap();
    let t = fx.create("t", vec![cf("f", 1)]);
    let e = fx.db.delete_table(&name).unwrap_err();
    assert_eq!(
        e.exception_name(),
        "org.apache.hadoop.hbase.TableNotDisabledException"
    );
    fx.db.disable_table(&name).unwrap();
    assert!(matches!(
        fx.db.disable_table(&name),
        Err(Error::TableNotEnabled(_))
    ));
    assert!(matches!(
        t.get(Get::new("r")),
        Err(Error::TableNotEnabled(_))
    ));
    fx.db.delete_table(&name).unwrap();
    assert!(matches!(fx.db.table("t"), Err(Error::TableNotFound(_))));
    let e = fx
        .db
        .create_table(
            basalt_model::TableDescriptor::new(&TableName::parse("nons:t").unwrap(), [cf("f", 1)]),
            &[],
        )
        .unwrap_err();
    assert_eq!(
        e.exception_name(),
        "org.apache.hadoop.hbase.NamespaceNotFoundException"
    );
    let e = fx.db.drop_namespace("default").unwrap_err();
    assert!(matches!(e, Error::Constraint(_)));
    fx.create("again", vec![cf("f", 1)]);
    let e = fx
        .db
        .create_table(
            basalt_model::TableDescriptor::new(&TableName::parse("again").unwrap(), [cf("f", 1)]),
            &[],
        )
        .unwrap_err();
    assert_eq!(e.to_string(), "Table already exists: again");
    let bad = fx.db.table("again").unwrap().scan(
        Scan::new()
            .with_filter(basalt_model::filter::parse_filter("PageFilter(1)").unwrap())
            .with_batch(1),
    );
    assert!(matches!(bad, Err(Error::IncompatibleFilter(_))));
    assert!(matches!(
        basalt_model::filter::parse_filter("Nope()"),
        Err(Error::IllegalArgument(_))
    ));
}

#[test]
fn namespaces_tables_and_schema_changes_survive_reopen() {
    let fx = Fixture::new();
    fx.db
        .create_namespace("ns1", [("k".to_owned(), "v".to_owned())].into())
        .unwrap();
    fx.create("ns1:t1", vec![cf("f", 1)]);
    fx.create("t2", vec![cf("f", 1)]);
    let t1 = TableName::parse("ns1:t1").unwrap();
    fx.db.put_family(&t1, cf("g", 5)).unwrap();
    {
        let t = fx.db.table("ns1:t1").unwrap();
        t.put(Put::new("r").add("g", "q", "v").add("f", "q", "w"))
            .unwrap();
    }
    fx.db.delete_family(&t1, b"f").unwrap();
    fx.db
        .alter_namespace(
            "ns1",
            [("k2".to_owned(), "v2".to_owned())].into(),
            &["k".to_owned()],
        )
        .unwrap();
    let fx = fx.reopen();
    assert_eq!(fx.db.list_namespaces(), ["default", "hbase", "ns1"]);
    let props = fx.db.namespace_properties("ns1").unwrap();
    assert_eq!(
        props.into_iter().collect::<Vec<_>>(),
        [("k2".to_owned(), "v2".to_owned())]
    );
    assert_eq!(fx.db.list_namespace_tables("ns1"), ["t1"]);
    assert_eq!(fx.db.list_tables(None).unwrap(), ["ns1:t1", "t2"]);
    assert_eq!(fx.db.list_tables(Some("ns1:.*")).unwrap(), ["ns1:t1"]);
    let d = fx.db.describe(&t1).unwrap();
    assert_eq!(
        d.families.keys().map(|k| k.to_vec()).collect::<Vec<_>>(),
        [b"g".to_vec()]
    );
    assert_eq!(d.families[&b"g"[..]].max_versions, 5);
    let t = fx.db.table("ns1:t1").unwrap();
    let r = t.get(Get::new("r")).unwrap();
    assert_eq!(render(&[r]).len(), 1);
    // re-adding a dropped family does not resurrect its old data from the WAL
    fx.db.put_family(&t1, cf("f", 1)).unwrap();
    drop(t);
    let fx = fx.reopen();
    let t = fx.db.table("ns1:t1").unwrap();
    assert!(t.get(Get::new("r").add_family("f")).unwrap().is_empty());
}

/// RELIABILITY.md D11, D12, D21: what HBase's client refuses before sending refuses the whole
/// batch; a Put carries only Put cells; scan bounds obey the row-length limit.
#[test]
fn invalid_items_refuse_the_whole_batch_and_puts_carry_only_puts() {
    use basalt_model::ops::{Delete, Mutation};
    use basalt_model::{Cell, CellType};
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1)]);
    t.put(Put::new("victim").add("f", "q", "kept")).unwrap();
    let small = |r: &str| Mutation::Put(Put::new(r.to_owned()).add("f", "q", "v"));
    let big = Mutation::Put(Put::new("b").add("f", "q", vec![0u8; 10 * 1024 * 1024 + 1]));
    let long_row = Mutation::Put(Put::new(vec![b'x'; 32_768]).add("f", "q", "v"));
    for bad in [big, long_row, Mutation::Put(Put::new("empty"))] {
        let results = t.batch(vec![small("a"), bad, small("c")]);
        assert_eq!(results.len(), 3);
        for r in &results {
            assert!(matches!(r, Err(Error::IllegalArgument(_))), "{r:?}");
        }
        let why = results[0].as_ref().unwrap_err().to_string();
        assert!(why.contains("mutation 1 of the batch was refused"), "{why}");
        assert!(t.get(Get::new("a")).unwrap().is_empty());
        assert!(t.get(Get::new("c")).unwrap().is_empty());
    }
    // A Put carrying a delete marker is refused; the row keeps its data.
    let mut put = Put::new("victim");
    put.cells.push({
        let mut c = Cell::put("victim", "f", "", 1, "");
        c.cell_type = CellType::DeleteFamily;
        c
    });
    let e = t.put(put).unwrap_err();
    assert!(e.to_string().contains("only Put cells"), "{e}");
    // And a Delete carrying a value is refused, nothing written.
    let mut del = Delete::new("victim");
    del.markers
        .push(Cell::put("victim", "f", "new", 1, "planted"));
    let e = t.delete(del).unwrap_err();
    assert!(e.to_string().contains("only delete markers"), "{e}");
    assert_eq!(values(&t.get(Get::new("victim")).unwrap()), ["kept"]);
    // Scan bounds longer than a row key are refused as HBase's Scan does.
    for scan in [
        Scan::new().with_start_row(vec![b'k'; 100_000], true),
        Scan::new().with_stop_row(vec![b'k'; 32_768], false),
    ] {
        let e = t.scan(scan).unwrap_err();
        assert!(
            e.to_string()
                .contains("must be less than or equal to 32767"),
            "{e}"
        );
    }
    assert!(t
        .scan(Scan::new().with_start_row(vec![b'k'; 32_767], true))
        .is_ok());
}

/// RELIABILITY.md D15: hbase:meta exists (it can be scanned) and refuses disable, drop,
/// truncate and alter with HBase's constraint error, not "unknown table".
#[test]
fn the_catalog_table_refuses_ddl_with_a_constraint_error() {
    let fx = Fixture::new();
    let meta = TableName::parse("hbase:meta").unwrap();
    let cases: [(&str, basalt_model::Result<()>); 4] = [
        ("disable", fx.db.disable_table(&meta)),
        ("delete", fx.db.delete_table(&meta)),
        ("truncate", fx.db.truncate_table(&meta, false)),
        ("modify", fx.db.modify_table(fx.db.describe(&meta).unwrap())),
    ];
    for (action, result) in cases {
        let e = result.unwrap_err();
        assert!(matches!(e, Error::Constraint(_)), "{action}: {e}");
        assert_eq!(e.to_string(), format!("Cannot {action} catalog table"));
    }
    // It is enabled, so enabling it is refused as for any enabled table.
    assert!(matches!(
        fx.db.enable_table(&meta),
        Err(Error::TableNotDisabled(_))
    ));
    // And it still serves.
    fx.create("t", vec![cf("f", 1)]);
    let rows = fx
        .db
        .table("hbase:meta")
        .unwrap()
        .scan(Scan::new())
        .unwrap()
        .collect_rows()
        .unwrap();
    assert!(!rows.is_empty());
}

/// SEMANTICS.md #75 on the read side: a Get or Scan naming a family the table lacks is
/// refused with `NoSuchColumnFamily`, naming the first such family in family order (as the
/// families of the read are kept), whatever order the read named them in; a read of the
/// families that exist still answers.
#[test]
fn reads_of_an_unknown_family_are_refused_naming_it() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1), cf("m", 1)]);
    t.put(Put::new("r").add("f", "a", "1").add("m", "b", "2"))
        .unwrap();
    let family_named = |e: Error| match e {
        Error::NoSuchColumnFamily { family, .. } => family,
        other => panic!("expected NoSuchColumnFamily, got {other}"),
    };
    let e = t.get(Get::new("r").add_column("nope", "q")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Column family nope does not exist in table t"
    );
    // Named out of order, beside families that exist: the first missing in order.
    let get = Get::new("r")
        .add_family("zz")
        .add_column("f", "a")
        .add_family("c")
        .add_family("m");
    assert_eq!(family_named(t.get(get).unwrap_err()), "c");
    let scan = Scan::new()
        .add_family("m")
        .add_column("g", "x")
        .add_family("f");
    let e = t
        .scan(scan)
        .and_then(basalt_node::TableScanner::collect_rows)
        .unwrap_err();
    assert_eq!(family_named(e), "g");
    // The families that exist, named out of order, read as ever.
    let row = t
        .get(Get::new("r").add_family("m").add_column("f", "a"))
        .unwrap();
    let families: Vec<&[u8]> = row.cells.iter().map(|c| &c.family[..]).collect();
    assert_eq!(families, [&b"f"[..], b"m"]);
}
