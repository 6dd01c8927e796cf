//! A region that fails to open is visible as failed to an operator (RELIABILITY.md D3, D10):
//! on the web page and through the native API's region list, while the rest serves.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use basalt_model::ops::Put;
use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
use basalt_node::Database;
use basalt_proto::pb;
use common::{http_get, Running};

#[test]
fn a_region_without_its_manifest_shows_as_failed_open_on_the_page_and_in_list_regions() {
    let dir = tempfile::tempdir().unwrap();
    let lost = {
        let db = Database::open(dir.path()).unwrap();
        let name = TableName::parse("t").unwrap();
        db.create_table(
            TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]),
            &[bytes::Bytes::from_static(b"m")],
        )
        .unwrap();
        let t = db.table("t").unwrap();
        for row in ["a", "z"] {
            t.put(Put::new(row).add("f", "q", "v")).unwrap();
        }
        drop(t);
        let lost = db.regions(&name).unwrap()[1].id;
        db.close().unwrap();
        lost
    };
    let rdir = dir.path().join(format!("data/default/t/{lost}"));
    for f in std::fs::read_dir(&rdir).unwrap() {
        let p = f.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("MANIFEST-")
        {
            std::fs::remove_file(p).unwrap();
        }
    }
    let data_dir = dir.path().to_string_lossy().into_owned();
    let srv = Running::start_in(dir, |_| {});
    let page = http_get(srv.info, "/");
    assert!(page.contains("FAILED_OPEN: corrupt region in"), "{page}");
    assert!(page.contains("no manifest"), "{page}");
    assert!(
        !page.contains(&data_dir),
        "the page shows the server's directory"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let regions = rt.block_on(async {
        let mut c = pb::admin_client::AdminClient::connect(format!("http://{}", srv.native))
            .await
            .unwrap();
        let r = pb::NameRequest {
            name: "t".to_owned(),
        };
        c.list_regions(r).await.unwrap().into_inner().regions
    });
    let failed: Vec<_> = regions
        .iter()
        .filter(|r| !r.failed_open.is_empty())
        .collect();
    assert_eq!(failed.len(), 1, "{regions:?}");
    assert_eq!(failed[0].id, lost);
    assert!(!failed[0].failed_open.contains(&data_dir));
}
