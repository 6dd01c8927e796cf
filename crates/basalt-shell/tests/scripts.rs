//! The shell run on scripts against an embedded database; output compared exactly, with
//! `Took` timings masked.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod support;

use basalt_shell::ScriptEnd;
use support::{db, lines, run_on};

#[test]
fn namespace_walkthrough() {
    let (_d, db) = db();
    let r = run_on(
        &db,
        "create_namespace 'my_ns'
         create 'my_ns:my_table', 'fam'
         list_namespace_tables 'my_ns'
         drop_namespace 'my_ns'",
    );
    let want = lines(
        "|Took X seconds
         |Created table my_ns:my_table
         |Took X seconds
         |TABLE
         |my_table
         |1 row(s)
         |Took X seconds
         |ERROR: org.apache.hadoop.hbase.constraint.ConstraintException: Only empty namespaces can be removed. Namespace my_ns has 1 tables
         |
         |For usage try 'help \"drop_namespace\"'
         |
         |Took X seconds",
    );
    assert_eq!(r.out, want);
    assert_eq!(r.end, ScriptEnd::Failed);
    let r = run_on(
        &db,
        "disable 'my_ns:my_table'
         drop 'my_ns:my_table'
         drop_namespace 'my_ns'
         list_namespace",
    );
    let want = lines(
        "|Took X seconds
         |Took X seconds
         |Took X seconds
         |NAMESPACE
         |default
         |hbase
         |2 row(s)
         |Took X seconds",
    );
    assert_eq!(r.out, want);
    assert_eq!(r.end, ScriptEnd::Done);
}

/// The webtable of HBase's data-model chapter: two rows, families contents, anchor and
/// people, versions t3 to t9; each read returns what the chapter says it returns.
#[test]
fn webtable_reads_return_what_the_data_model_chapter_says() {
    let (_d, db) = db();
    let setup = run_on(
        &db,
        "create 'webtable', {NAME => 'contents', VERSIONS => 3}, 'anchor', 'people'
         put 'webtable', 'com.cnn.www', 'anchor:cnnsi.com', 'CNN', 9
         put 'webtable', 'com.cnn.www', 'anchor:my.look.ca', 'CNN.com', 8
         put 'webtable', 'com.cnn.www', 'contents:html', '<html>v6', 6
         put 'webtable', 'com.cnn.www', 'contents:html', '<html>v5', 5
         put 'webtable', 'com.cnn.www', 'contents:html', '<html>v3', 3
         put 'webtable', 'com.example.www', 'contents:html', '<html>ex', 5
         put 'webtable', 'com.example.www', 'people:author', 'John Doe', 5",
    );
    assert_eq!(setup.end, ScriptEnd::Done, "{}", setup.out);
    // No value at exactly t8 for contents:html, nor at t9 for anchor:my.look.ca.
    let r = run_on(
        &db,
        "get 'webtable', 'com.cnn.www', {COLUMN => 'contents:html', TIMESTAMP => 8}
         get 'webtable', 'com.cnn.www', {COLUMN => 'anchor:my.look.ca', TIMESTAMP => 9}",
    );
    let want = lines(
        "|COLUMN  CELL
         |0 row(s)
         |Took X seconds
         |COLUMN  CELL
         |0 row(s)
         |Took X seconds",
    );
    assert_eq!(r.out, want);
    // Without a timestamp: the newest version; the whole row: the newest of each column.
    let r = run_on(
        &db,
        "get 'webtable', 'com.cnn.www', 'contents:html'
         get 'webtable', 'com.cnn.www'
         get 'webtable', 'com.cnn.www', {COLUMN => 'contents:html', VERSIONS => 3}",
    );
    let want = lines(
        "|COLUMN  CELL
         | contents:html timestamp={t6}, value=<html>v6
         |1 row(s)
         |Took X seconds
         |COLUMN  CELL
         | anchor:cnnsi.com timestamp={t9}, value=CNN
         | anchor:my.look.ca timestamp={t8}, value=CNN.com
         | contents:html timestamp={t6}, value=<html>v6
         |1 row(s)
         |Took X seconds
         |COLUMN  CELL
         | contents:html timestamp={t6}, value=<html>v6
         | contents:html timestamp={t5}, value=<html>v5
         | contents:html timestamp={t3}, value=<html>v3
         |1 row(s)
         |Took X seconds",
    );
    assert_eq!(r.out, want);
    let r = run_on(&db, "scan 'webtable'");
    let want = lines(
        "|ROW  COLUMN+CELL
         | com.cnn.www column=anchor:cnnsi.com, timestamp={t9}, value=CNN
         | com.cnn.www column=anchor:my.look.ca, timestamp={t8}, value=CNN.com
         | com.cnn.www column=contents:html, timestamp={t6}, value=<html>v6
         | com.example.www column=contents:html, timestamp={t5}, value=<html>ex
         | com.example.www column=people:author, timestamp={t5}, value=John Doe
         |2 row(s)
         |Took X seconds",
    );
    assert_eq!(r.out, want);
}

#[test]
fn alter_changes_versions_and_min_versions_and_describe_shows_them() {
    let (_d, db) = db();
    let r = run_on(
        &db,
        "create 't1', 'f1'
         alter 't1', NAME => 'f1', VERSIONS => 5
         alter 't1', NAME => 'f1', MIN_VERSIONS => 2
         describe 't1'",
    );
    let want = lines(
        "|Created table t1
         |Took X seconds
         |Updating all regions with the new schema...
         |1/1 regions updated.
         |Done.
         |Took X seconds
         |Updating all regions with the new schema...
         |1/1 regions updated.
         |Done.
         |Took X seconds
         |Table t1 is ENABLED
         |t1
         |COLUMN FAMILIES DESCRIPTION
         |{NAME => 'f1', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '5', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '2', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}
         |
         |1 row(s)
         |Quota is disabled
         |Took X seconds",
    );
    assert_eq!(r.out, want);
}

#[test]
fn errors_are_worded_as_hbase_words_them() {
    let (_d, db) = db();
    let r = run_on(&db, "create 't1', 'f1'\ncreate 't1', 'f1'");
    assert!(
        r.out.ends_with(&lines(
            "|ERROR: Table already exists: t1!
         |
         |For usage try 'help \"create\"'
         |
         |Took X seconds"
        )),
        "{}",
        r.out
    );
    for (script, error) in [
        ("describe 'nope'", "ERROR: Unknown table nope!"),
        (
            "put 't1', 'r', 'nofam:q', 'v'",
            "ERROR: Unknown column family! Valid column names: f1:*",
        ),
        ("create 'ns9:t', 'f'", "ERROR: Unknown namespace ns9!"),
        ("drop 't1'", "ERROR: Table t1 should be disabled!"),
    ] {
        let r = run_on(&db, script);
        assert_eq!(r.end, ScriptEnd::Failed, "{script}");
        assert!(r.out.starts_with(error), "{script}: {}", r.out);
    }
}

/// NEW_VERSION_BEHAVIOR as the HBase 2.5 shell takes and shows it: an option of a family
/// hash, printed among the METADATA values when on (HBase does not count it among its
/// reserved keys), and a delete that masks only what was written before it.
#[test]
fn new_version_behavior_is_created_described_altered_and_obeyed() {
    let (_d, db) = db();
    let r = run_on(
        &db,
        "create 't1', {NAME => 'f1', NEW_VERSION_BEHAVIOR => true}, 'f2'
         describe 't1'",
    );
    let want = lines(
        "|Created table t1
         |Took X seconds
         |Table t1 is ENABLED
         |t1
         |COLUMN FAMILIES DESCRIPTION
         |{NAME => 'f1', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '1', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)', METADATA => {'NEW_VERSION_BEHAVIOR' => 'true'}}
         |
         |{NAME => 'f2', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '1', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}
         |
         |2 row(s)
         |Quota is disabled
         |Took X seconds",
    );
    assert_eq!(r.out, want);
    // A put written after a delete shows though its timestamp is below the delete's.
    let r = run_on(
        &db,
        "put 't1', 'r', 'f1:q', 'before', 3
         put 't1', 'r', 'f2:q', 'before', 3
         deleteall 't1', 'r', 'f1:q', 9
         deleteall 't1', 'r', 'f2:q', 9
         put 't1', 'r', 'f1:q', 'after', 5
         put 't1', 'r', 'f2:q', 'after', 5
         get 't1', 'r'",
    );
    assert_eq!(r.end, ScriptEnd::Done, "{}", r.out);
    assert!(
        r.out.ends_with(&lines(
            "|COLUMN  CELL
             | f1:q timestamp={t5}, value=after
             |1 row(s)
             |Took X seconds"
        )),
        "{}",
        r.out
    );
    let r = run_on(
        &db,
        "alter 't1', NAME => 'f1', NEW_VERSION_BEHAVIOR => false
         alter 't1', NAME => 'f2', METADATA => {'NEW_VERSION_BEHAVIOR' => 'true'}
         describe 't1'",
    );
    assert!(
        r.out.contains(
            "{NAME => 'f1', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '1', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}\n"
        ),
        "{}",
        r.out
    );
    assert!(
        r.out.contains(
            "BLOCKSIZE => '65536 B (64KB)', METADATA => {'NEW_VERSION_BEHAVIOR' => 'true'}}"
        ),
        "{}",
        r.out
    );
}
