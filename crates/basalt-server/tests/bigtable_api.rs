//! The Bigtable v2 APIs of an in-process server, driven by a client generated from the same
//! protos: table admin, every data method, Bigtable's delete and timestamp semantics, its
//! error codes, and that what Bigtable writes is what HBase's API reads.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod common;

use admin::bigtable_table_admin_client::BigtableTableAdminClient;
use admin::modify_column_families_request::modification::Mod;
use basalt_bigtable_proto::google::bigtable::admin::v2 as admin;
use basalt_bigtable_proto::google::bigtable::v2 as data;
use common::Running;
use data::bigtable_client::BigtableClient;
use data::mutation::Mutation as M;
use tonic::transport::Channel;
use tonic::Code;

const INSTANCE: &str = "projects/p/instances/i";

struct Clients {
    data: BigtableClient<Channel>,
    admin: BigtableTableAdminClient<Channel>,
    server: Running,
}

async fn start() -> Clients {
    let server = Running::start(|_| {});
    let url = format!("http://{}", server.bigtable);
    let channel = Channel::from_shared(url).unwrap().connect().await.unwrap();
    Clients {
        data: BigtableClient::new(channel.clone())
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20),
        admin: BigtableTableAdminClient::new(channel),
        server,
    }
}

fn table(id: &str) -> String {
    format!("{INSTANCE}/tables/{id}")
}

fn versions(n: i32) -> admin::GcRule {
    admin::GcRule {
        rule: Some(admin::gc_rule::Rule::MaxNumVersions(n)),
    }
}

async fn create(
    c: &mut Clients,
    id: &str,
    families: &[(&str, Option<admin::GcRule>)],
    splits: &[&str],
) -> admin::Table {
    let t = admin::Table {
        column_families: families
            .iter()
            .map(|(n, r)| {
                (
                    (*n).to_owned(),
                    admin::ColumnFamily {
                        gc_rule: r.clone(),
                        value_type: None,
                    },
                )
            })
            .collect(),
        ..admin::Table::default()
    };
    c.admin
        .create_table(admin::CreateTableRequest {
            parent: INSTANCE.into(),
            table_id: id.into(),
            table: Some(t),
            initial_splits: splits
                .iter()
                .map(|k| admin::create_table_request::Split {
                    key: k.as_bytes().to_vec().into(),
                })
                .collect(),
        })
        .await
        .unwrap()
        .into_inner()
}

fn set(f: &str, q: &str, ts: i64, v: &str) -> data::Mutation {
    data::Mutation {
        mutation: Some(M::SetCell(data::mutation::SetCell {
            family_name: f.into(),
            column_qualifier: q.as_bytes().to_vec().into(),
            timestamp_micros: ts,
            value: v.as_bytes().to_vec().into(),
        })),
    }
}

fn delete_column(f: &str, q: &str, range: Option<(i64, i64)>) -> data::Mutation {
    data::Mutation {
        mutation: Some(M::DeleteFromColumn(data::mutation::DeleteFromColumn {
            family_name: f.into(),
            column_qualifier: q.as_bytes().to_vec().into(),
            time_range: range.map(|(s, e)| data::TimestampRange {
                start_timestamp_micros: s,
                end_timestamp_micros: e,
            }),
        })),
    }
}

fn delete_row() -> data::Mutation {
    data::Mutation {
        mutation: Some(M::DeleteFromRow(data::mutation::DeleteFromRow {})),
    }
}

async fn mutate(
    c: &mut Clients,
    t: &str,
    row: &str,
    mutations: Vec<data::Mutation>,
) -> Result<(), tonic::Status> {
    c.data
        .mutate_row(data::MutateRowRequest {
            table_name: table(t),
            row_key: row.as_bytes().to_vec().into(),
            mutations,
            ..Default::default()
        })
        .await
        .map(|_| ())
}

/// A row as (family, qualifier, timestamp, value) in response order.
type Cells = Vec<(String, String, i64, String)>;

/// Reads rows and reassembles them from the chunks, checking the protocol on the way.
async fn read(
    c: &mut Clients,
    req: data::ReadRowsRequest,
) -> Result<Vec<(String, Cells)>, tonic::Status> {
    let mut stream = c.data.read_rows(req).await?.into_inner();
    let mut rows = Vec::new();
    let (mut key, mut fam, mut qual) = (String::new(), String::new(), String::new());
    let mut cells: Cells = Vec::new();
    let mut value = Vec::new();
    let mut ts = 0;
    while let Some(resp) = stream.message().await? {
        for ch in resp.chunks {
            if !ch.row_key.is_empty() {
                key = String::from_utf8(ch.row_key.to_vec()).unwrap();
            }
            if let Some(f) = ch.family_name {
                fam = f;
            }
            if let Some(q) = ch.qualifier {
                qual = String::from_utf8(q).unwrap();
            }
            if value.is_empty() {
                ts = ch.timestamp_micros;
            }
            value.extend_from_slice(&ch.value);
            if ch.value_size == 0 {
                cells.push((
                    fam.clone(),
                    qual.clone(),
                    ts,
                    String::from_utf8_lossy(&value).into_owned(),
                ));
                value.clear();
            }
            if matches!(
                ch.row_status,
                Some(data::read_rows_response::cell_chunk::RowStatus::CommitRow(
                    true
                ))
            ) {
                rows.push((key.clone(), std::mem::take(&mut cells)));
            }
        }
    }
    assert!(cells.is_empty(), "a row was not committed");
    Ok(rows)
}

fn read_all(t: &str) -> data::ReadRowsRequest {
    data::ReadRowsRequest {
        table_name: table(t),
        ..Default::default()
    }
}

fn cell(f: &str, q: &str, ts: i64, v: &str) -> (String, String, i64, String) {
    (f.into(), q.into(), ts, v.into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_are_created_listed_and_refused_the_bigtable_way() {
    let mut c = start().await;
    let t = create(
        &mut c,
        "t1",
        &[("cf", Some(versions(2))), ("other", None)],
        &["m"],
    )
    .await;
    assert_eq!(t.name, table("t1"));
    assert_eq!(t.column_families["cf"].gc_rule, Some(versions(2)));
    let again = c
        .admin
        .create_table(admin::CreateTableRequest {
            parent: INSTANCE.into(),
            table_id: "t1".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(again.code(), Code::AlreadyExists);
    let bad = c
        .admin
        .create_table(admin::CreateTableRequest {
            parent: INSTANCE.into(),
            table_id: "bad name!".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    // A table with no family yet, as Bigtable allows.
    create(&mut c, "empty", &[], &[]).await;
    let list = c
        .admin
        .list_tables(admin::ListTablesRequest {
            parent: INSTANCE.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let names: Vec<_> = list.tables.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, [table("empty"), table("t1")]);
}

fn modification(id: &str, m: Mod) -> admin::modify_column_families_request::Modification {
    admin::modify_column_families_request::Modification {
        id: id.into(),
        r#mod: Some(m),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn families_change_and_tables_go_away_the_bigtable_way() {
    let mut c = start().await;
    create(
        &mut c,
        "t1",
        &[("cf", Some(versions(2))), ("other", None)],
        &[],
    )
    .await;
    let modified = c
        .admin
        .modify_column_families(admin::ModifyColumnFamiliesRequest {
            name: table("t1"),
            modifications: vec![
                modification("new", Mod::Create(admin::ColumnFamily::default())),
                modification(
                    "cf",
                    Mod::Update(admin::ColumnFamily {
                        gc_rule: Some(versions(5)),
                        value_type: None,
                    }),
                ),
                modification("other", Mod::Drop(true)),
            ],
            ignore_warnings: false,
        })
        .await
        .unwrap()
        .into_inner();
    let mut fams: Vec<_> = modified.column_families.keys().cloned().collect();
    fams.sort();
    assert_eq!(fams, ["cf", "new"]);
    assert_eq!(modified.column_families["cf"].gc_rule, Some(versions(5)));
    let missing = c
        .admin
        .get_table(admin::GetTableRequest {
            name: table("nope"),
            view: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
    let token = c
        .admin
        .generate_consistency_token(admin::GenerateConsistencyTokenRequest { name: table("t1") })
        .await
        .unwrap()
        .into_inner()
        .consistency_token;
    let consistent = c
        .admin
        .check_consistency(admin::CheckConsistencyRequest {
            name: table("t1"),
            consistency_token: token,
            mode: None,
        })
        .await
        .unwrap()
        .into_inner()
        .consistent;
    assert!(consistent);
    c.admin
        .delete_table(admin::DeleteTableRequest { name: table("t1") })
        .await
        .unwrap();
    let gone = c
        .admin
        .get_table(admin::GetTableRequest {
            name: table("t1"),
            view: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(gone.code(), Code::NotFound);
    drop(c.server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_remove_what_exists_and_never_mask_later_writes() {
    let mut c = start().await;
    create(&mut c, "t", &[("cf", None)], &[]).await;
    mutate(
        &mut c,
        "t",
        "r",
        vec![set("cf", "a", 5000, "old"), set("cf", "a", 9000, "new")],
    )
    .await
    .unwrap();
    mutate(&mut c, "t", "r", vec![delete_column("cf", "a", None)])
        .await
        .unwrap();
    assert!(read(&mut c, read_all("t")).await.unwrap().is_empty());
    // A later write at an older timestamp than the deleted cells is visible.
    mutate(&mut c, "t", "r", vec![set("cf", "a", 1000, "later")])
        .await
        .unwrap();
    let rows = read(&mut c, read_all("t")).await.unwrap();
    assert_eq!(
        rows,
        [("r".to_owned(), vec![cell("cf", "a", 1000, "later")])]
    );
    // In one request, a delete removes the SetCells before it, not those after it.
    mutate(
        &mut c,
        "t",
        "r",
        vec![
            set("cf", "b", 2000, "gone"),
            delete_row(),
            set("cf", "c", 3000, "kept"),
        ],
    )
    .await
    .unwrap();
    let rows = read(&mut c, read_all("t")).await.unwrap();
    assert_eq!(
        rows,
        [("r".to_owned(), vec![cell("cf", "c", 3000, "kept")])]
    );
    // A time-ranged delete removes exactly the versions in [start, end).
    mutate(
        &mut c,
        "t",
        "s",
        (1..=4)
            .map(|i| set("cf", "q", i * 1000, &format!("v{i}")))
            .collect(),
    )
    .await
    .unwrap();
    mutate(
        &mut c,
        "t",
        "s",
        vec![delete_column("cf", "q", Some((2000, 4000)))],
    )
    .await
    .unwrap();
    let rows = read(&mut c, read_all("t")).await.unwrap();
    assert_eq!(
        rows[1],
        (
            "s".to_owned(),
            vec![cell("cf", "q", 4000, "v4"), cell("cf", "q", 1000, "v1")]
        )
    );
    mutate(&mut c, "t", "s", vec![set("cf", "q", 3000, "back")])
        .await
        .unwrap();
    let rows = read(&mut c, read_all("t")).await.unwrap();
    assert_eq!(rows[1].1[1], cell("cf", "q", 3000, "back"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_bigtables_codes_and_writes_nothing() {
    let mut c = start().await;
    create(&mut c, "t", &[("cf", None)], &[]).await;
    let code = |r: Result<(), tonic::Status>| r.unwrap_err().code();
    assert_eq!(
        code(mutate(&mut c, "t", "r", vec![set("cf", "a", 1500, "x")]).await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(mutate(&mut c, "t", "", vec![set("cf", "a", 1000, "x")]).await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(mutate(&mut c, "t", "r", vec![]).await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(mutate(&mut c, "nope", "r", vec![set("cf", "a", 1000, "x")]).await),
        Code::NotFound
    );
    // One bad mutation refuses the whole request.
    let r = mutate(
        &mut c,
        "t",
        "r",
        vec![set("cf", "a", 1000, "x"), set("missing", "a", 1000, "x")],
    )
    .await;
    assert_eq!(code(r), Code::NotFound);
    let big = "x".repeat(11 << 20);
    let r = mutate(
        &mut c,
        "t",
        "r",
        vec![set("cf", "a", 1000, "x"), set("cf", "b", 1000, &big)],
    )
    .await;
    assert_eq!(code(r), Code::InvalidArgument);
    assert!(read(&mut c, read_all("t")).await.unwrap().is_empty());
    let bad_filter = data::ReadRowsRequest {
        filter: Some(data::RowFilter {
            filter: Some(data::row_filter::Filter::RowKeyRegexFilter("[".into())),
        }),
        ..read_all("t")
    };
    assert_eq!(
        read(&mut c, bad_filter).await.unwrap_err().code(),
        Code::InvalidArgument
    );
    // A value of 9 MiB is under the cell limit: it is written and read back whole, in chunks.
    let nine = "y".repeat(9 << 20);
    mutate(&mut c, "t", "big", vec![set("cf", "v", 1000, &nine)])
        .await
        .unwrap();
    let rows = read(&mut c, read_all("t")).await.unwrap();
    assert_eq!(rows[0].1[0].3.len(), nine.len());
}

fn rmw(rules: Vec<data::ReadModifyWriteRule>) -> data::ReadModifyWriteRowRequest {
    data::ReadModifyWriteRowRequest {
        table_name: table("t"),
        row_key: "r".into(),
        rules,
        ..Default::default()
    }
}

fn inc(q: &str, n: i64) -> data::ReadModifyWriteRule {
    data::ReadModifyWriteRule {
        family_name: "cf".into(),
        column_qualifier: q.as_bytes().to_vec().into(),
        rule: Some(data::read_modify_write_rule::Rule::IncrementAmount(n)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_and_read_modify_write_operations() {
    let mut c = start().await;
    create(&mut c, "t", &[("cf", None)], &[]).await;
    mutate(
        &mut c,
        "t",
        "r",
        vec![set("cf", "n", 1000, "\0\0\0\0\0\0\0\x05")],
    )
    .await
    .unwrap();
    let check = |value: &str| data::CheckAndMutateRowRequest {
        table_name: table("t"),
        row_key: "r".into(),
        predicate_filter: Some(data::RowFilter {
            filter: Some(data::row_filter::Filter::ValueRegexFilter(
                value.as_bytes().to_vec().into(),
            )),
        }),
        true_mutations: vec![set("cf", "t", 1000, "yes")],
        false_mutations: vec![set("cf", "f", 1000, "no")],
        ..Default::default()
    };
    let m = c
        .data
        .check_and_mutate_row(check("nothing"))
        .await
        .unwrap()
        .into_inner();
    assert!(!m.predicate_matched);
    let m = c
        .data
        .check_and_mutate_row(check("\0.*"))
        .await
        .unwrap()
        .into_inner();
    assert!(m.predicate_matched);
    let quals: Vec<_> = read(&mut c, read_all("t")).await.unwrap()[0]
        .1
        .iter()
        .map(|c| c.1.clone())
        .collect();
    assert_eq!(quals, ["f", "n", "t"]);
    let row = c
        .data
        .read_modify_write_row(rmw(vec![inc("n", 10), inc("n", 1)]))
        .await
        .unwrap()
        .into_inner()
        .row
        .unwrap();
    let value = &row.families[0].columns[0].cells[0].value;
    assert_eq!(i64::from_be_bytes(value[..].try_into().unwrap()), 16);
    let wrong = c
        .data
        .read_modify_write_row(rmw(vec![inc("t", 1)]))
        .await
        .unwrap_err();
    assert_eq!(wrong.code(), Code::FailedPrecondition);
    let append = data::ReadModifyWriteRule {
        family_name: "cf".into(),
        column_qualifier: "t".into(),
        rule: Some(data::read_modify_write_rule::Rule::AppendValue("!".into())),
    };
    let row = c
        .data
        .read_modify_write_row(rmw(vec![append]))
        .await
        .unwrap()
        .into_inner()
        .row
        .unwrap();
    assert_eq!(&row.families[0].columns[0].cells[0].value[..], b"yes!");
}

/// Each entry's status code.
async fn mutate_rows(c: &mut Clients, entries: Vec<data::mutate_rows_request::Entry>) -> Vec<i32> {
    let mut statuses = c
        .data
        .mutate_rows(data::MutateRowsRequest {
            table_name: table("t"),
            entries,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut codes = Vec::new();
    while let Some(r) = statuses.message().await.unwrap() {
        codes.extend(r.entries.iter().map(|e| e.status.as_ref().unwrap().code));
    }
    codes
}

async fn sample_keys(c: &mut Clients) -> Vec<String> {
    let mut samples = c
        .data
        .sample_row_keys(data::SampleRowKeysRequest {
            table_name: table("t"),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut keys = Vec::new();
    while let Some(s) = samples.message().await.unwrap() {
        keys.push(String::from_utf8(s.row_key.to_vec()).unwrap());
    }
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_take_row_sets_limits_reversal_and_stats_and_samples_follow_regions() {
    let mut c = start().await;
    create(&mut c, "t", &[("cf", None)], &["c", "f"]).await;
    let entries = ["a", "b", "c", "d", "e", "f", "g"]
        .iter()
        .map(|k| data::mutate_rows_request::Entry {
            row_key: k.as_bytes().to_vec().into(),
            mutations: vec![set("cf", "q", 1000, k)],
            idempotency: None,
        })
        .chain(std::iter::once(data::mutate_rows_request::Entry {
            row_key: "x".into(),
            mutations: vec![set("nope", "q", 1000, "x")],
            idempotency: None,
        }))
        .collect();
    assert_eq!(
        mutate_rows(&mut c, entries).await,
        [0, 0, 0, 0, 0, 0, 0, Code::NotFound as i32]
    );
    let keys = |rows: Vec<(String, Cells)>| rows.into_iter().map(|r| r.0).collect::<Vec<_>>();
    let set_of = data::RowSet {
        row_keys: vec!["g".into(), "a".into()],
        row_ranges: vec![data::RowRange {
            start_key: Some(data::row_range::StartKey::StartKeyOpen("b".into())),
            end_key: Some(data::row_range::EndKey::EndKeyClosed("d".into())),
        }],
    };
    let req = data::ReadRowsRequest {
        rows: Some(set_of.clone()),
        ..read_all("t")
    };
    assert_eq!(keys(read(&mut c, req).await.unwrap()), ["a", "c", "d", "g"]);
    let req = data::ReadRowsRequest {
        rows: Some(set_of),
        reversed: true,
        rows_limit: 3,
        ..read_all("t")
    };
    assert_eq!(keys(read(&mut c, req).await.unwrap()), ["g", "d", "c"]);
    let mut stream = c
        .data
        .read_rows(data::ReadRowsRequest {
            request_stats_view: 2,
            rows_limit: 2,
            ..read_all("t")
        })
        .await
        .unwrap()
        .into_inner();
    let mut stats = None;
    while let Some(r) = stream.message().await.unwrap() {
        stats = r.request_stats.or(stats);
    }
    let Some(data::request_stats::StatsView::FullReadStatsView(v)) = stats.unwrap().stats_view
    else {
        panic!("no full stats")
    };
    assert_eq!(v.read_iteration_stats.unwrap().rows_returned_count, 2);
    assert_eq!(sample_keys(&mut c).await, ["c", "f", ""]);
    c.admin
        .drop_row_range(admin::DropRowRangeRequest {
            name: table("t"),
            target: Some(admin::drop_row_range_request::Target::RowKeyPrefix(
                "b".into(),
            )),
        })
        .await
        .unwrap();
    assert_eq!(
        keys(read(&mut c, read_all("t")).await.unwrap()),
        ["a", "c", "d", "e", "f", "g"]
    );
    c.admin
        .drop_row_range(admin::DropRowRangeRequest {
            name: table("t"),
            target: Some(admin::drop_row_range_request::Target::DeleteAllDataFromTable(true)),
        })
        .await
        .unwrap();
    assert!(read(&mut c, read_all("t")).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregate_families_add_to_cells() {
    let mut c = start().await;
    let sum = admin::Type {
        kind: Some(admin::r#type::Kind::AggregateType(Box::new(
            admin::r#type::Aggregate {
                input_type: Some(Box::new(admin::Type {
                    kind: Some(admin::r#type::Kind::Int64Type(
                        admin::r#type::Int64::default(),
                    )),
                })),
                state_type: None,
                aggregator: Some(admin::r#type::aggregate::Aggregator::Sum(
                    admin::r#type::aggregate::Sum {},
                )),
            },
        ))),
    };
    c.admin
        .create_table(admin::CreateTableRequest {
            parent: INSTANCE.into(),
            table_id: "agg".into(),
            table: Some(admin::Table {
                column_families: [(
                    "sum".to_owned(),
                    admin::ColumnFamily {
                        gc_rule: None,
                        value_type: Some(sum),
                    },
                )]
                .into(),
                ..Default::default()
            }),
            initial_splits: vec![],
        })
        .await
        .unwrap();
    let add = |n: i64| data::Mutation {
        mutation: Some(M::AddToCell(data::mutation::AddToCell {
            family_name: "sum".into(),
            column_qualifier: Some(data::Value {
                r#type: None,
                kind: Some(data::value::Kind::RawValue("q".into())),
            }),
            timestamp: Some(data::Value {
                r#type: None,
                kind: Some(data::value::Kind::RawTimestampMicros(1000)),
            }),
            input: Some(data::Value {
                r#type: None,
                kind: Some(data::value::Kind::IntValue(n)),
            }),
        })),
    };
    mutate(&mut c, "agg", "r", vec![add(5), add(7)])
        .await
        .unwrap();
    mutate(&mut c, "agg", "r", vec![add(-2)]).await.unwrap();
    let rows = read(&mut c, read_all("agg")).await.unwrap();
    let value = rows[0].1[0].3.as_bytes();
    assert_eq!(i64::from_be_bytes(value.try_into().unwrap()), 10);
    let refused = mutate(&mut c, "agg", "r", vec![set("sum", "q", 1000, "x")])
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
}

/// The newest value of `family:qualifier` in `row`, read with the client alone.
async fn newest(c: &mut BigtableClient<Channel>, row: &str, qualifier: &str) -> Vec<u8> {
    use data::row_filter::{Chain, Filter};
    let only = |f| data::RowFilter { filter: Some(f) };
    let filter = Filter::Chain(Chain {
        filters: vec![
            only(Filter::ColumnQualifierRegexFilter(
                qualifier.as_bytes().to_vec().into(),
            )),
            only(Filter::CellsPerColumnLimitFilter(1)),
        ],
    });
    let rows = data::RowSet {
        row_keys: vec![row.as_bytes().to_vec().into()],
        row_ranges: Vec::new(),
    };
    let req = data::ReadRowsRequest {
        table_name: table("grouped"),
        rows: Some(rows),
        filter: Some(only(filter)),
        ..Default::default()
    };
    let mut stream = c.read_rows(req).await.unwrap().into_inner();
    let mut value = Vec::new();
    while let Some(m) = stream.message().await.unwrap() {
        m.chunks
            .iter()
            .for_each(|ch| value.extend_from_slice(&ch.value));
    }
    value
}

/// Concurrent MutateRow requests are written in groups (one engine batch for each group):
/// each request still gets its own answer, a refused one fails alone, and an OK means the
/// write is readable at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_mutate_rows_each_get_their_own_answer() {
    let mut c = start().await;
    create(&mut c, "grouped", &[("cf", None)], &[]).await;
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..16 {
        let mut data = c.data.clone();
        writers.spawn(async move {
            let mut written = 0;
            for i in 0..25 {
                // Writers share rows; each writes its own column, each row at most once.
                let row = format!("r{:02}", (w * 7 + i) % 40);
                let (family, value) = if i % 5 == 4 {
                    ("nope", String::new())
                } else {
                    ("cf", format!("w{w}-{i}"))
                };
                let q = format!("w{w}");
                let answer = data
                    .mutate_row(data::MutateRowRequest {
                        table_name: table("grouped"),
                        row_key: row.as_bytes().to_vec().into(),
                        mutations: vec![set(family, &q, -1, &value)],
                        ..Default::default()
                    })
                    .await;
                if family == "nope" {
                    assert_eq!(answer.unwrap_err().code(), Code::NotFound);
                    continue;
                }
                answer.unwrap();
                assert_eq!(newest(&mut data, &row, &q).await, value.as_bytes());
                written += 1;
            }
            written
        });
    }
    let mut written = 0;
    while let Some(n) = writers.join_next().await {
        written += n.unwrap();
    }
    let rows = read(&mut c, read_all("grouped")).await.unwrap();
    let cells: usize = rows.iter().map(|(_, cells)| cells.len()).sum();
    assert_eq!((written, cells), (16 * 20, 16 * 20));
}
