//! Splits, merges and the catalog janitor on a deterministic cluster (see `tests.rs`).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use basalt_model::Error;
use bytes::Bytes;

use super::tests::{assert_catalog_matches_servers, create, Cluster};
use super::*;
use crate::catalog::RegionState;

fn regions(m: &ClusterMaster, t: &TableName) -> Vec<RegionInfo> {
    m.catalog().table(t).unwrap().regions.clone()
}

/// Major-compacts every region where it is open, and waits for the servers' background
/// work, so no region reads its parent's files.
fn compact_all(cluster: &Cluster, m: &ClusterMaster, t: &TableName) {
    m.maintain_table(t, Compaction::Major).unwrap();
    for s in cluster.servers.0.lock().values() {
        s.wait_idle().unwrap();
    }
}

#[test]
fn a_split_at_a_key_switches_in_one_commit_and_keeps_every_row() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let _servers = cluster.region_servers(16020, 2);
    let t = create(&m, "t", 2);
    cluster.fill(&m, &t, 20);
    let parent = regions(&m, &t)[0].clone();
    let server = m.catalog().assignments[&parent.id].server.clone().unwrap();

    m.split_region(parent.id, Some(b"row0005")).unwrap();
    let now = regions(&m, &t);
    let keys: Vec<(&[u8], &[u8])> = now
        .iter()
        .map(|r| (&r.start_key[..], &r.end_key[..]))
        .collect();
    assert_eq!(
        keys,
        [
            (&b""[..], &b"row0005"[..]),
            (b"row0005", b"row0010"),
            (b"row0010", b""),
        ]
    );
    let c = m.catalog();
    let retired = &c.table(&t).unwrap().retired;
    assert_eq!(retired.len(), 1);
    assert_eq!(retired[0].info, parent);
    assert_eq!(retired[0].state, RegionState::Split);
    assert_eq!(retired[0].successors, [now[0].id, now[1].id]);
    assert!(!c.assignments.contains_key(&parent.id));
    // The daughters open where the parent was, at their committed epochs.
    for d in &now[..2] {
        assert_eq!(
            c.assignments[&d.id].server.as_deref(),
            Some(server.as_str())
        );
    }
    assert_catalog_matches_servers(&cluster, &m);
    assert!(cluster.server(&server).region(parent.id).is_err());
    cluster.assert_rows(&m, &t, 20);
    cluster.fill(&m, &t, 30);
    cluster.assert_rows(&m, &t, 30);

    // The daughters' server compacts their references away on its own; then nothing reads
    // the parent, and the janitor frees it.
    cluster.server(&server).wait_idle().unwrap();
    assert_eq!(m.run_catalog_janitor().unwrap(), 1);
    assert!(m.catalog().table(&t).unwrap().retired.is_empty());
    assert_eq!(m.run_catalog_janitor().unwrap(), 0);
    cluster.assert_rows(&m, &t, 30);
    // Compacted, the daughters merge again.
    m.merge_regions(&[now[0].id, now[1].id], false).unwrap();
    assert_eq!(regions(&m, &t).len(), 2);
    cluster.assert_rows(&m, &t, 30);
}

#[test]
fn a_split_without_a_key_uses_the_split_point_and_refuses_bad_keys() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let _servers = cluster.region_servers(16020, 1);
    let t = create(&m, "t", 1);
    let only = regions(&m, &t)[0].clone();
    // An empty region has no split point: nothing happens.
    m.split_table(&t, None).unwrap();
    assert_eq!(regions(&m, &t), std::slice::from_ref(&only));
    cluster.fill(&m, &t, 100);
    m.maintain_table(&t, Compaction::None).unwrap();
    let e = m.split_region(only.id, Some(b"")).unwrap_err();
    assert!(
        e.to_string().contains("Split row is equal to startkey"),
        "{e}"
    );
    m.split_table(&t, None).unwrap();
    let now = regions(&m, &t);
    assert_eq!(now.len(), 2, "{now:?}");
    let middle = &now[0].end_key;
    assert!(
        middle[..] > b"row0000"[..] && middle[..] < b"row0099"[..],
        "{middle:?}"
    );
    cluster.assert_rows(&m, &t, 100);

    // Splits disabled for the table are refused.
    let mut desc = m.catalog().table(&t).unwrap().descriptor.clone();
    desc.split_enabled = false;
    m.modify_table(desc).unwrap();
    compact_all(&cluster, &m, &t);
    let e = m.split_table(&t, Some(b"row0003")).unwrap_err();
    assert!(e.to_string().contains("split is disabled"), "{e}");
}

#[test]
fn a_merge_of_regions_on_different_servers_keeps_every_row() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let servers = cluster.region_servers(16020, 2);
    let t = create(&m, "t", 4);
    cluster.fill(&m, &t, 40);
    let rs = regions(&m, &t);
    // Two adjacent regions, moved apart.
    m.move_region(rs[1].id, Some(&servers[0].name())).unwrap();
    m.move_region(rs[2].id, Some(&servers[1].name())).unwrap();
    let e = m.merge_regions(&[rs[0].id, rs[2].id], true).unwrap_err();
    assert!(e.to_string().contains("non-adjacent"), "{e}");
    assert!(matches!(
        m.merge_regions(&[rs[1].id], false),
        Err(Error::MergeRegion(_))
    ));

    m.merge_regions(&[rs[2].id, rs[1].id], false).unwrap();
    let now = regions(&m, &t);
    assert_eq!(now.len(), 3);
    assert_eq!(
        (&now[1].start_key, &now[1].end_key),
        (&rs[1].start_key, &rs[2].end_key)
    );
    let c = m.catalog();
    // On the first parent's server.
    assert_eq!(
        c.assignments[&now[1].id].server.as_deref(),
        Some(servers[0].name().as_str())
    );
    let retired = &c.table(&t).unwrap().retired;
    assert!(retired
        .iter()
        .all(|r| r.state == RegionState::Merged && r.successors == [now[1].id]));
    assert_catalog_matches_servers(&cluster, &m);
    cluster.assert_rows(&m, &t, 40);
    compact_all(&cluster, &m, &t);
    assert_eq!(m.run_catalog_janitor().unwrap(), 2);
    cluster.assert_rows(&m, &t, 40);
}

#[test]
fn a_merge_refuses_a_parent_that_its_server_does_not_hold() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let servers = cluster.region_servers(16020, 2);
    let t = create(&m, "t", 4);
    cluster.fill(&m, &t, 40);
    let rs = regions(&m, &t);
    // A master died between assigning the region and its open: the catalog names a
    // server that does not hold it.
    let (_, server) = m.locate(&t, &rs[1].start_key).unwrap();
    let holder = servers.iter().find(|s| Some(s.name()) == server).unwrap();
    holder.close_region(m.epoch(), rs[1].id).unwrap();
    let e = m.merge_regions(&[rs[0].id, rs[1].id], false).unwrap_err();
    assert!(
        matches!(e, Error::NotServingRegion(ref m) if m.contains("not online")),
        "{e}"
    );
    assert_eq!(regions(&m, &t), rs, "nothing merged");
    m.assign_all().unwrap();
    m.merge_regions(&[rs[0].id, rs[1].id], false).unwrap();
    assert_catalog_matches_servers(&cluster, &m);
    cluster.assert_rows(&m, &t, 40);
}

#[test]
fn a_server_reporting_a_region_past_max_filesize_has_it_split() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let _servers = cluster.region_servers(16020, 1);
    let name = TableName::parse("big").unwrap();
    let mut desc = TableDescriptor::new(&name, [basalt_model::ColumnFamilyDescriptor::new("f")]);
    // Below HBase's sanity limit, which the table's configuration lifts (as HBase's does).
    desc.max_filesize_bytes = 1024;
    desc.configuration
        .insert("hbase.table.sanity.checks".to_owned(), "false".to_owned());
    m.create_table(desc, &[]).unwrap();
    assert_eq!(
        m.split_large_regions().unwrap(),
        0,
        "an empty region stays whole"
    );
    for i in 0..200 {
        let v = format!("{i:0>64}");
        cluster.put(&m, &name, &format!("row{i:04}"), &v);
    }
    m.maintain_table(&name, Compaction::None).unwrap();
    assert_eq!(m.split_large_regions().unwrap(), 1);
    assert_eq!(regions(&m, &name).len(), 2);
    let rows: Vec<Option<Bytes>> = (0..200)
        .map(|i| cluster.get(&m, &name, &format!("row{i:04}")))
        .collect();
    assert!(rows.iter().all(Option::is_some));
}
