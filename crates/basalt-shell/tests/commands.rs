//! Each shell command's behaviour and output, on an embedded database.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod support;

use basalt_shell::ScriptEnd;
use support::{db, lines, run_on};

fn ok(db: &basalt_node::Database, script: &str) -> String {
    let r = run_on(db, script);
    assert_eq!(r.end, ScriptEnd::Done, "{}", r.out);
    r.out
}

#[test]
fn scans_take_hbase_options() {
    let (_d, db) = db();
    ok(
        &db,
        "create 't', {NAME => 'f', VERSIONS => 3}, 'g'
         put 't', 'r1', 'f:a', 'x', 1
         put 't', 'r1', 'f:a', 'y', 2
         put 't', 'r2', 'g', 'z', 3
         put 't', 'r3', 'f:b', \"\\x00\\xff\", 5",
    );
    let cases = [
        (
            "scan 't', {LIMIT => 1}",
            "|ROW  COLUMN+CELL
             | r1 column=f:a, timestamp={t2}, value=y
             |1 row(s)",
        ),
        (
            "scan 't', {STARTROW => 'r2', STOPROW => 'r3'}",
            "|ROW  COLUMN+CELL
             | r2 column=g:, timestamp={t3}, value=z
             |1 row(s)",
        ),
        (
            "scan 't', {REVERSED => true, COLUMNS => ['f']}",
            "|ROW  COLUMN+CELL
             | r3 column=f:b, timestamp={t5}, value=\\x00\\xFF
             | r1 column=f:a, timestamp={t2}, value=y
             |2 row(s)",
        ),
        (
            "scan 't', {VERSIONS => 3, ROWPREFIXFILTER => 'r1'}",
            "|ROW  COLUMN+CELL
             | r1 column=f:a, timestamp={t2}, value=y
             | r1 column=f:a, timestamp={t1}, value=x
             |1 row(s)",
        ),
        (
            "scan 't', {FILTER => \"ValueFilter(=, 'binary:z')\"}",
            "|ROW  COLUMN+CELL
             | r2 column=g:, timestamp={t3}, value=z
             |1 row(s)",
        ),
        (
            "scan 't', {TIMERANGE => [2, 4]}",
            "|ROW  COLUMN+CELL
             | r1 column=f:a, timestamp={t2}, value=y
             | r2 column=g:, timestamp={t3}, value=z
             |2 row(s)",
        ),
    ];
    for (script, want) in cases {
        let out = ok(&db, script);
        assert_eq!(out, lines(want) + "\nTook X seconds", "{script}");
    }
}

#[test]
fn deletes_counters_and_appends() {
    let (_d, db) = db();
    ok(
        &db,
        "create 't', {NAME => 'f', VERSIONS => 3}
         put 't', 'r', 'f:a', 'v1', 1
         put 't', 'r', 'f:a', 'v2', 2
         put 't', 'r', 'f:b', 'w', 2",
    );
    // delete takes one version; deleteall a column's versions, or the row.
    let out = ok(
        &db,
        "delete 't', 'r', 'f:a'\nget 't', 'r', {COLUMN => 'f:a', VERSIONS => 3}",
    );
    assert_eq!(
        out,
        lines(
            "|Took X seconds
             |COLUMN  CELL
             | f:a timestamp={t1}, value=v1
             |1 row(s)
             |Took X seconds"
        )
    );
    let out = ok(&db, "scan 't', {RAW => true, VERSIONS => 3}");
    assert!(
        out.contains(
            " r column=f:a, timestamp={t2}, type=Delete"
                .replace("{t2}", &basalt_shell::format::local_date_time(2))
                .as_str()
        ),
        "{out}"
    );
    let out = ok(
        &db,
        "deleteall 't', 'r', 'f:a'\ndeleteall 't', 'r'\ncount 't'",
    );
    assert!(out.ends_with("0 row(s)\nTook X seconds"), "{out}");
    // The counter's second write is stamped max(now, previous + 1), as HBase stamps them.
    let out = ok(
        &db,
        "incr 't', 'c', 'f:n'
         incr 't', 'c', 'f:n', 10
         get_counter 't', 'c', 'f:n'
         get_counter 't', 'c', 'f:none'
         append 't', 'c', 'f:s', 'ab'
         append 't', 'c', 'f:s', 'cd'
         scan 't', {COLUMNS => ['f:n']}",
    );
    let want = lines(
        "|COUNTER VALUE = 1
         |Took X seconds
         |COUNTER VALUE = 11
         |Took X seconds
         |COUNTER VALUE = 11
         |Took X seconds
         |No counter found at specified coordinates
         |Took X seconds
         |CURRENT VALUE = ab
         |Took X seconds
         |CURRENT VALUE = abcd
         |Took X seconds
         |ROW  COLUMN+CELL
         | c column=f:n, timestamp={now+1}, value=\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x0B
         |1 row(s)
         |Took X seconds",
    );
    assert_eq!(out, want);
}

#[test]
fn tables_are_listed_checked_counted_and_truncated() {
    let (_d, db) = db();
    let out = ok(
        &db,
        "create 'a1', 'f'
         create 'b1', 'f'
         list
         list 'a.*'
         exists 'a1'
         exists 'zz'
         is_enabled 'a1'
         disable 'a1'
         is_disabled 'a1'
         describe 'a1'",
    );
    let want = lines(
        "|Created table a1
         |Took X seconds
         |Created table b1
         |Took X seconds
         |TABLE
         |a1
         |b1
         |2 row(s)
         |Took X seconds
         |TABLE
         |a1
         |1 row(s)
         |Took X seconds
         |Table a1 does exist
         |Took X seconds
         |Table zz does not exist
         |Took X seconds
         |true
         |Took X seconds
         |Took X seconds
         |true
         |Took X seconds
         |Table a1 is DISABLED",
    );
    assert!(out.starts_with(&want), "{out}");
    let mut script = String::from("enable 'a1'\n");
    for i in 0..25 {
        script.push_str(&format!("put 'a1', 'r{i:02}', 'f', 'v'\n"));
    }
    script.push_str("count 'a1', INTERVAL => 10\ntruncate 'a1'\ncount 'a1'");
    let out = ok(&db, &script);
    assert!(
        out.ends_with(&lines(
            "|Current count: 10, row: r09
             |Current count: 20, row: r19
             |25 row(s)
             |Took X seconds
             |Truncating 'a1' table (it may take a while):
             |Disabling table...
             |Truncating table...
             |Took X seconds
             |0 row(s)
             |Took X seconds"
        )),
        "{out}"
    );
}

#[test]
fn regions_are_split_merged_and_listed() {
    let (_d, db) = db();
    let out = ok(
        &db,
        "create 't', 'f', SPLITS => ['g', 'p']
         get_splits 't'
         split 't', 'k'
         get_splits 't'",
    );
    let want = lines(
        "|Created table t
         |Took X seconds
         |Total number of splits = 3
         |g
         |p
         |Took X seconds
         |Took X seconds
         |Total number of splits = 4
         |g
         |k
         |p
         |Took X seconds",
    );
    assert_eq!(out, want);
    let regions = db
        .regions(&basalt_model::TableName::parse("t").unwrap())
        .unwrap();
    let name = basalt_model::TableName::parse("t").unwrap();
    let (a, b) = (
        regions[2].encoded_name(&name),
        regions[3].encoded_name(&name),
    );
    ok(
        &db,
        &format!("major_compact 't'\nmerge_region '{a}', '{b}'"),
    );
    let out = ok(&db, "get_splits 't'\nlist_regions 't'");
    assert!(
        out.starts_with("Total number of splits = 3\ng\nk\n"),
        "{out}"
    );
    assert!(
        out.contains("SERVER_NAME | ")
            && out.contains(" | START_KEY | END_KEY | SIZE | REQ | LOCALITY |"),
        "{out}"
    );
    assert!(out.contains(" localhost,16020,"), "{out}");
    assert!(out.contains(" 3 rows"), "{out}");
    // hbase:meta can be scanned like any table.
    let out = ok(&db, "scan 'hbase:meta', {COLUMNS => ['info:state']}");
    assert!(out.contains("column=info:state"), "{out}");
    assert!(out.contains("value=OPEN"), "{out}");
}

#[test]
fn namespaces_table_references_and_help() {
    let (_d, db) = db();
    let out = ok(
        &db,
        "create_namespace 'ns1', {'PROPERTY_NAME' => 'PROPERTY_VALUE'}
         describe_namespace 'ns1'
         alter_namespace 'ns1', {METHOD => 'unset', NAME => 'PROPERTY_NAME'}
         describe_namespace 'ns1'
         t = create 'ns1:t1', 'f'
         t.put 'r1', 'f:q', 'v'
         t.get 'r1'
         u = get_table 'ns1:t1'
         u.count",
    );
    let want = lines(
        "|Took X seconds
         |DESCRIPTION
         |{NAME => 'ns1', PROPERTY_NAME => 'PROPERTY_VALUE'}
         |Quota is disabled
         |Took X seconds
         |Took X seconds
         |DESCRIPTION
         |{NAME => 'ns1'}
         |Quota is disabled
         |Took X seconds
         |Created table ns1:t1
         |Took X seconds
         |Took X seconds
         |COLUMN  CELL
         | f:q timestamp={now}, value=v
         |1 row(s)
         |Took X seconds
         |Took X seconds
         |1 row(s)
         |Took X seconds",
    );
    assert_eq!(out, want);
    let out = ok(&db, "help");
    assert!(
        out.contains("COMMAND GROUPS:\n  Group name: general\n"),
        "{out}"
    );
    assert!(out.contains("  Group name: dml\n  Commands: append, count, delete, deleteall, get, get_counter, get_splits, incr, put, scan, truncate, truncate_preserve\n"), "{out}");
    let out = ok(&db, "help 'get'");
    assert!(out.starts_with("Get row or cell contents"), "{out}");
    // Every command has its own help text, with an example.
    for name in basalt_shell::Shell::command_names() {
        let out = ok(&db, &format!("help '{name}'"));
        assert!(out.contains("hbase> "), "{name}: {out}");
    }
    let r = run_on(&db, "nosuchcommand 'x'");
    assert_eq!(r.end, ScriptEnd::Failed);
    assert!(
        r.out
            .starts_with("NameError: undefined local variable or method `nosuchcommand'"),
        "{}",
        r.out
    );
}

/// A standalone server answers the cluster's commands as a cluster of one: it is its own
/// master and only server, the balancer switch remembers, and a move elsewhere or a
/// decommission is refused, saying why.
#[test]
fn cluster_commands_on_a_standalone_server() {
    let (_d, db) = db();
    ok(&db, "create 't', 'f', SPLITS => ['m']");
    let me = db.server_name();
    let out = ok(&db, "status 'simple'");
    let mut p = me.splitn(3, ',');
    let (host, port, start) = (p.next().unwrap(), p.next().unwrap(), p.next().unwrap());
    assert!(
        out.contains(&format!("active master:  {host}:{port} {start}")),
        "{out}"
    );
    assert!(out.contains("0 backup masters"), "{out}");
    assert!(out.contains("1 live servers"), "{out}");
    assert!(out.contains("numberOfOnlineRegions=3"), "{out}"); // two of t's and hbase:meta
    assert!(out.contains("0 dead servers"), "{out}");
    let out = ok(&db, "status 'detailed'");
    assert!(out.contains("0 regionsInTransition"), "{out}");
    let region = db
        .regions(&basalt_model::TableName::parse("t").unwrap())
        .unwrap()[1]
        .encoded_name(&basalt_model::TableName::parse("t").unwrap());
    assert!(out.contains(&region), "{out}");
    let out = ok(
        &db,
        "balance_switch false\nbalancer\nbalance_switch true\nbalancer",
    );
    let printed: Vec<&str> = out.lines().filter(|l| !l.starts_with("Took")).collect();
    assert_eq!(
        printed,
        [
            "Previous balancer state : true",
            "false",
            "Previous balancer state : false",
            "true"
        ],
        "{out}"
    );
    let out = ok(
        &db,
        &format!("move '{region}'\nmove '{region}', '{me}'\nassign '{region}'"),
    );
    assert!(!out.contains("ERROR"), "{out}");
    let out = ok(&db, "list_decommissioned_regionservers");
    assert!(
        out.contains("DECOMMISSIONED REGION SERVERS\n0 row(s)"),
        "{out}"
    );
    for (script, why) in [
        (
            format!("move '{region}', 'other,16020,1'"),
            "is the only one",
        ),
        (
            format!("decommission_regionservers '{me}'"),
            "would leave no server",
        ),
        (format!("unassign '{region}'"), "keeps every region"),
        ("move 'nosuchregion'".to_owned(), "nosuchregion"),
        (
            "status 'sideways'".to_owned(),
            "'summary', 'simple' or 'detailed'",
        ),
    ] {
        let r = run_on(&db, &script);
        assert_eq!(r.end, ScriptEnd::Failed, "{script}: {}", r.out);
        assert!(r.out.contains(why), "{script}: {}", r.out);
    }
    // Rows are where they were.
    ok(&db, "put 't', 'z', 'f:q', 'v'");
    assert!(ok(&db, "get 't', 'z'").contains("value=v"));
}
