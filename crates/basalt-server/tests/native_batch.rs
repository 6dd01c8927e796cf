//! The native API's Batch writes through mini-batches (RELIABILITY.md D19): a thousand puts
//! cost a handful of WAL syncs, not one each, and every put lands.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use basalt_proto::pb;
use common::{metric_value, metrics, put_mutation, Running};

#[test]
fn a_batch_of_a_thousand_puts_takes_a_handful_of_wal_syncs() {
    let srv = Running::start(|_| {});
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (entries, syncs) = rt.block_on(async {
        let url = format!("http://{}", srv.native);
        let mut admin = pb::admin_client::AdminClient::connect(url.clone())
            .await
            .unwrap();
        let schema = pb::TableSchema {
            name: "b".to_owned(),
            families: vec![basalt_proto::schema::family_to_pb(
                &basalt_model::ColumnFamilyDescriptor::new("f"),
            )],
            ..pb::TableSchema::default()
        };
        let create = pb::CreateTableRequest {
            schema: Some(schema),
            split_keys: Vec::new(),
        };
        admin.create_table(create).await.unwrap();
        let before = metric_value(&metrics(srv.info), "basalt_wal_syncs_total");
        let mut table = pb::table_client::TableClient::connect(url).await.unwrap();
        let batch = pb::BatchRequest {
            table: "b".to_owned(),
            mutations: (0..1000)
                .map(|i| put_mutation(&format!("row{i:05}")))
                .collect(),
        };
        let entries = table.batch(batch).await.unwrap().into_inner().entries;
        let after = metric_value(&metrics(srv.info), "basalt_wal_syncs_total");
        (entries, after - before)
    });
    assert_eq!(entries.len(), 1000);
    assert!(entries
        .iter()
        .all(|e| matches!(e.outcome, Some(pb::batch_entry::Outcome::Ok(_)))));
    // One sync per mini-batch of up to 1,000 rows (before: one per put).
    assert!(syncs <= 3, "{syncs} WAL syncs for one batch of 1,000 puts");
}
