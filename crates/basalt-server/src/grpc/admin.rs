//! The administrative RPCs (HBase's master RPCs): each one line over `basalt_api::Admin`.

use basalt_model::Error;
use basalt_proto::pb;
use basalt_proto::schema::{region_load_to_pb, schema_from_pb, schema_to_pb};
use tonic::{Request, Response, Status};

use super::{blocking, empty, table, Services};

#[tonic::async_trait]
impl pb::admin_server::Admin for Services {
    async fn create_namespace(
        &self,
        r: Request<pb::NamespaceRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "create_namespace", move |s| {
            s.conn
                .admin()
                .create_namespace(&r.name, r.properties.into_iter().collect())
                .map(|()| empty())
        })
        .await
    }

    async fn drop_namespace(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "drop_namespace", move |s| {
            s.conn.admin().drop_namespace(&r.name).map(|()| empty())
        })
        .await
    }

    async fn alter_namespace(
        &self,
        r: Request<pb::AlterNamespaceRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "alter_namespace", move |s| {
            s.conn
                .admin()
                .alter_namespace(&r.name, r.set.into_iter().collect(), &r.unset)
                .map(|()| empty())
        })
        .await
    }

    async fn describe_namespace(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::NamespaceResponse>, Status> {
        let r = r.into_inner();
        blocking(self, "describe_namespace", move |s| {
            let props = s.conn.admin().namespace_properties(&r.name)?;
            Ok(pb::NamespaceResponse {
                properties: props.into_iter().collect(),
            })
        })
        .await
    }

    async fn list_namespaces(
        &self,
        _r: Request<pb::Empty>,
    ) -> std::result::Result<Response<pb::Names>, Status> {
        blocking(self, "list_namespaces", |s| {
            Ok(pb::Names {
                names: s.conn.admin().list_namespaces()?,
            })
        })
        .await
    }

    async fn list_namespace_tables(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Names>, Status> {
        let r = r.into_inner();
        blocking(self, "list_namespace_tables", move |s| {
            Ok(pb::Names {
                names: s.conn.admin().list_namespace_tables(&r.name)?,
            })
        })
        .await
    }

    async fn create_table(
        &self,
        r: Request<pb::CreateTableRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "create_table", move |s| {
            let schema = r
                .schema
                .ok_or_else(|| Error::illegal("malformed request: no schema"))?;
            s.conn
                .admin()
                .create_table(schema_from_pb(schema)?, &r.split_keys)
                .map(|()| empty())
        })
        .await
    }

    async fn describe_table(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::TableSchema>, Status> {
        let r = r.into_inner();
        blocking(self, "describe_table", move |s| {
            Ok(schema_to_pb(&s.conn.admin().describe(&table(&r.name)?)?))
        })
        .await
    }

    async fn modify_table(
        &self,
        r: Request<pb::TableSchema>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "modify_table", move |s| {
            s.conn
                .admin()
                .modify_table(schema_from_pb(r)?)
                .map(|()| empty())
        })
        .await
    }

    async fn table_exists(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::BoolResponse>, Status> {
        let r = r.into_inner();
        blocking(self, "table_exists", move |s| {
            Ok(pb::BoolResponse {
                value: s.conn.admin().table_exists(&table(&r.name)?)?,
            })
        })
        .await
    }

    async fn is_table_enabled(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::BoolResponse>, Status> {
        let r = r.into_inner();
        blocking(self, "is_table_enabled", move |s| {
            Ok(pb::BoolResponse {
                value: s.conn.admin().is_enabled(&table(&r.name)?)?,
            })
        })
        .await
    }

    async fn enable_table(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "enable_table", move |s| {
            s.conn
                .admin()
                .enable_table(&table(&r.name)?)
                .map(|()| empty())
        })
        .await
    }

    async fn disable_table(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "disable_table", move |s| {
            s.conn
                .admin()
                .disable_table(&table(&r.name)?)
                .map(|()| empty())
        })
        .await
    }

    async fn delete_table(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "delete_table", move |s| {
            s.conn
                .admin()
                .delete_table(&table(&r.name)?)
                .map(|()| empty())
        })
        .await
    }

    async fn truncate_table(
        &self,
        r: Request<pb::TruncateRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "truncate_table", move |s| {
            s.conn
                .admin()
                .truncate_table(&table(&r.name)?, r.preserve_splits)
                .map(|()| empty())
        })
        .await
    }

    async fn list_tables(
        &self,
        r: Request<pb::ListTablesRequest>,
    ) -> std::result::Result<Response<pb::Names>, Status> {
        let r = r.into_inner();
        blocking(self, "list_tables", move |s| {
            Ok(pb::Names {
                names: s.conn.admin().list_tables(r.pattern.as_deref())?,
            })
        })
        .await
    }

    async fn flush(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "flush", move |s| {
            s.conn.admin().flush(&table(&r.name)?).map(|()| empty())
        })
        .await
    }

    async fn compact(
        &self,
        r: Request<pb::CompactRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "compact", move |s| {
            s.conn.admin().compact(&table(&r.name)?, r.major)?;
            Ok(empty())
        })
        .await
    }

    async fn split(
        &self,
        r: Request<pb::SplitRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "split", move |s| {
            if r.region.is_empty() {
                s.conn
                    .admin()
                    .split_table(&table(&r.table)?, r.key.as_deref())?;
            } else {
                s.conn.admin().split_region(&r.region, r.key.as_deref())?;
            }
            Ok(empty())
        })
        .await
    }

    async fn merge(
        &self,
        r: Request<pb::MergeRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "merge", move |s| {
            let names: Vec<&[u8]> = r.regions.iter().map(|b| &b[..]).collect();
            s.conn
                .admin()
                .merge_regions(&names, r.force)
                .map(|()| empty())
        })
        .await
    }

    async fn list_regions(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Regions>, Status> {
        let r = r.into_inner();
        blocking(self, "list_regions", move |s| {
            let t = table(&r.name)?;
            let regions = s
                .conn
                .admin()
                .region_reports(&t)?
                .iter()
                .map(|r| region_load_to_pb(&t, &r.region, &r.load, &r.server))
                .collect();
            Ok(pb::Regions { regions })
        })
        .await
    }

    async fn get_cluster_id(
        &self,
        _r: Request<pb::Empty>,
    ) -> std::result::Result<Response<pb::ClusterIdResponse>, Status> {
        blocking(self, "get_cluster_id", |s| {
            Ok(pb::ClusterIdResponse {
                cluster_id: s.conn.admin().cluster_id()?,
            })
        })
        .await
    }

    async fn run_catalog_janitor(
        &self,
        _r: Request<pb::Empty>,
    ) -> std::result::Result<Response<pb::CountResponse>, Status> {
        blocking(self, "run_catalog_janitor", |s| {
            Ok(pb::CountResponse {
                count: s.conn.admin().run_catalog_janitor()? as u64,
            })
        })
        .await
    }

    async fn get_cluster_status(
        &self,
        _r: Request<pb::Empty>,
    ) -> std::result::Result<Response<pb::ClusterStatus>, Status> {
        blocking(self, "get_cluster_status", |s| {
            Ok(status_to_pb(&s.conn.admin().cluster_status()?))
        })
        .await
    }

    async fn move_region(
        &self,
        r: Request<pb::MoveRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "move_region", move |s| {
            let dest = (!r.destination.is_empty()).then_some(r.destination.as_str());
            s.conn
                .admin()
                .move_region(&r.region, dest)
                .map(|()| empty())
        })
        .await
    }

    async fn assign(
        &self,
        r: Request<pb::RegionRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "assign", move |s| {
            s.conn.admin().assign(&r.region).map(|()| empty())
        })
        .await
    }

    async fn unassign(
        &self,
        r: Request<pb::RegionRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "unassign", move |s| {
            s.conn.admin().unassign(&r.region).map(|()| empty())
        })
        .await
    }

    async fn balance(
        &self,
        _r: Request<pb::Empty>,
    ) -> std::result::Result<Response<pb::BoolResponse>, Status> {
        blocking(self, "balance", |s| {
            Ok(pb::BoolResponse {
                value: s.conn.admin().balance()?,
            })
        })
        .await
    }

    async fn balance_switch(
        &self,
        r: Request<pb::BoolRequest>,
    ) -> std::result::Result<Response<pb::BoolResponse>, Status> {
        let on = r.into_inner().value;
        blocking(self, "balance_switch", move |s| {
            Ok(pb::BoolResponse {
                value: s.conn.admin().balance_switch(on)?,
            })
        })
        .await
    }

    async fn decommission(
        &self,
        r: Request<pb::DecommissionRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "decommission", move |s| {
            s.conn
                .admin()
                .decommission(&r.servers, r.offload)
                .map(|()| empty())
        })
        .await
    }

    async fn recommission(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "recommission", move |s| {
            s.conn.admin().recommission(&r.name).map(|()| empty())
        })
        .await
    }

    async fn list_decommissioned(
        &self,
        _r: Request<pb::Empty>,
    ) -> std::result::Result<Response<pb::Names>, Status> {
        blocking(self, "list_decommissioned", |s| {
            Ok(pb::Names {
                names: s.conn.admin().list_decommissioned()?,
            })
        })
        .await
    }
}

fn status_to_pb(s: &basalt_api::ClusterStatus) -> pb::ClusterStatus {
    let servers = s
        .servers
        .iter()
        .map(|x| pb::ServerStatus {
            name: x.name.clone(),
            regions: x.regions as u64,
            load: Some(pb::Region {
                store_files: u32::try_from(x.load.store_files).unwrap_or(u32::MAX),
                store_file_bytes: x.load.store_file_bytes,
                memstore_bytes: x.load.memstore_bytes,
                read_requests: x.load.read_requests,
                write_requests: x.load.write_requests,
                ..pb::Region::default()
            }),
        })
        .collect();
    pb::ClusterStatus {
        cluster_id: s.cluster_id.clone(),
        master: s.master.clone(),
        backup_masters: s.backup_masters.clone(),
        servers,
        dead_servers: s.dead_servers.clone(),
        recoveries: s.recoveries.clone(),
        decommissioned: s.decommissioned.clone(),
        in_transition: s.in_transition.clone(),
        balancer_on: s.balancer_on,
        answered_by: s.answered_by.clone(),
    }
}
