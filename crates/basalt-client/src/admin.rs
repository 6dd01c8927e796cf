//! `Admin`: namespaces, tables, regions.

use std::collections::BTreeMap;

use basalt_model::region::RegionInfo;
use basalt_model::{Result, TableDescriptor, TableName};
use std::sync::Arc;

use basalt_proto::pb::{self};
use basalt_proto::schema::{region_from_pb, schema_from_pb, schema_to_pb};
use bytes::Bytes;

use crate::retry::Idempotence;
use crate::servers::Servers;
use crate::ClientConfig;

/// HBase's Admin, served by the active master. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Admin {
    servers: Arc<Servers>,
    config: ClientConfig,
}

fn name(n: &TableName) -> pb::NameRequest {
    pb::NameRequest {
        name: n.to_string(),
    }
}

impl Admin {
    pub(crate) fn new(servers: Arc<Servers>, config: ClientConfig) -> Admin {
        Admin { servers, config }
    }

    pub async fn create_namespace(&self, ns: &str, props: BTreeMap<String, String>) -> Result<()> {
        let r = pb::NamespaceRequest {
            name: ns.to_owned(),
            properties: props.into_iter().collect(),
        };
        rpc!(self, Idempotence::Idempotent, create_namespace, r.clone()).map(drop)
    }

    pub async fn drop_namespace(&self, ns: &str) -> Result<()> {
        rpc!(
            self,
            Idempotence::Idempotent,
            drop_namespace,
            pb::NameRequest {
                name: ns.to_owned()
            }
        )
        .map(drop)
    }

    pub async fn alter_namespace(
        &self,
        ns: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()> {
        let r = pb::AlterNamespaceRequest {
            name: ns.to_owned(),
            set: set.into_iter().collect(),
            unset: unset.to_vec(),
        };
        rpc!(self, Idempotence::Idempotent, alter_namespace, r.clone()).map(drop)
    }

    pub async fn namespace_properties(&self, ns: &str) -> Result<BTreeMap<String, String>> {
        let r = rpc!(
            self,
            Idempotence::Idempotent,
            describe_namespace,
            pb::NameRequest {
                name: ns.to_owned()
            }
        )?;
        Ok(r.properties.into_iter().collect())
    }

    pub async fn list_namespaces(&self) -> Result<Vec<String>> {
        let mut v = rpc!(self, Idempotence::Idempotent, list_namespaces, pb::Empty {})?.names;
        v.sort();
        Ok(v)
    }

    pub async fn list_namespace_tables(&self, ns: &str) -> Result<Vec<String>> {
        Ok(rpc!(
            self,
            Idempotence::Idempotent,
            list_namespace_tables,
            pb::NameRequest {
                name: ns.to_owned()
            }
        )?
        .names)
    }

    pub async fn create_table(&self, desc: &TableDescriptor, split_keys: &[Bytes]) -> Result<()> {
        let r = pb::CreateTableRequest {
            schema: Some(schema_to_pb(desc)),
            split_keys: split_keys.to_vec(),
        };
        rpc!(self, Idempotence::Idempotent, create_table, r.clone()).map(drop)
    }

    pub async fn describe(&self, t: &TableName) -> Result<TableDescriptor> {
        schema_from_pb(rpc!(
            self,
            Idempotence::Idempotent,
            describe_table,
            name(t)
        )?)
    }

    pub async fn modify_table(&self, desc: &TableDescriptor) -> Result<()> {
        rpc!(
            self,
            Idempotence::Idempotent,
            modify_table,
            schema_to_pb(desc)
        )
        .map(drop)
    }

    pub async fn table_exists(&self, t: &TableName) -> Result<bool> {
        Ok(rpc!(self, Idempotence::Idempotent, table_exists, name(t))?.value)
    }

    pub async fn is_enabled(&self, t: &TableName) -> Result<bool> {
        Ok(rpc!(self, Idempotence::Idempotent, is_table_enabled, name(t))?.value)
    }

    pub async fn enable_table(&self, t: &TableName) -> Result<()> {
        rpc!(self, Idempotence::Idempotent, enable_table, name(t)).map(drop)
    }

    pub async fn disable_table(&self, t: &TableName) -> Result<()> {
        rpc!(self, Idempotence::Idempotent, disable_table, name(t)).map(drop)
    }

    pub async fn delete_table(&self, t: &TableName) -> Result<()> {
        rpc!(self, Idempotence::Idempotent, delete_table, name(t)).map(drop)
    }

    pub async fn truncate_table(&self, t: &TableName, preserve_splits: bool) -> Result<()> {
        let r = pb::TruncateRequest {
            name: t.to_string(),
            preserve_splits,
        };
        rpc!(self, Idempotence::Idempotent, truncate_table, r.clone()).map(drop)
    }

    pub async fn list_tables(&self, pattern: Option<&str>) -> Result<Vec<String>> {
        let r = pb::ListTablesRequest {
            pattern: pattern.map(str::to_owned),
        };
        Ok(rpc!(self, Idempotence::Idempotent, list_tables, r.clone())?.names)
    }

    pub async fn flush(&self, t: &TableName) -> Result<()> {
        rpc!(self, Idempotence::Idempotent, flush, name(t)).map(drop)
    }

    pub async fn compact(&self, t: &TableName, major: bool) -> Result<()> {
        rpc!(
            self,
            Idempotence::Idempotent,
            compact,
            pb::CompactRequest {
                name: t.to_string(),
                major
            }
        )
        .map(drop)
    }

    pub async fn split_table(&self, t: &TableName, key: Option<&[u8]>) -> Result<()> {
        let r = pb::SplitRequest {
            table: t.to_string(),
            region: Bytes::new(),
            key: key.map(Bytes::copy_from_slice),
        };
        rpc!(self, Idempotence::Idempotent, split, r.clone()).map(drop)
    }

    pub async fn split_region(&self, region: &[u8], key: Option<&[u8]>) -> Result<()> {
        let r = pb::SplitRequest {
            table: String::new(),
            region: Bytes::copy_from_slice(region),
            key: key.map(Bytes::copy_from_slice),
        };
        rpc!(self, Idempotence::Idempotent, split, r.clone()).map(drop)
    }

    pub async fn merge_regions(&self, regions: &[&[u8]], force: bool) -> Result<()> {
        let r = pb::MergeRequest {
            regions: regions.iter().map(|r| Bytes::copy_from_slice(r)).collect(),
            force,
        };
        rpc!(self, Idempotence::Idempotent, merge, r.clone()).map(drop)
    }

    pub async fn regions(&self, t: &TableName) -> Result<Vec<RegionInfo>> {
        Ok(rpc!(self, Idempotence::Idempotent, list_regions, name(t))?
            .regions
            .into_iter()
            .map(region_from_pb)
            .collect())
    }

    /// Each region with the server that serves it and its load.
    pub async fn region_loads(
        &self,
        t: &TableName,
    ) -> Result<Vec<(RegionInfo, basalt_model::region::RegionLoad, String)>> {
        let regions = rpc!(self, Idempotence::Idempotent, list_regions, name(t))?.regions;
        Ok(regions
            .into_iter()
            .map(|r| {
                let load = basalt_proto::schema::region_load_from_pb(&r);
                let server = r.server.clone();
                (region_from_pb(r), load, server)
            })
            .collect())
    }

    pub async fn run_catalog_janitor(&self) -> Result<usize> {
        Ok(usize::try_from(
            rpc!(
                self,
                Idempotence::Idempotent,
                run_catalog_janitor,
                pb::Empty {}
            )?
            .count,
        )
        .unwrap_or(usize::MAX))
    }

    /// The cluster's id (HBase's `hbase.id`).
    pub async fn cluster_id(&self) -> Result<String> {
        Ok(rpc!(self, Idempotence::Idempotent, get_cluster_id, pb::Empty {})?.cluster_id)
    }

    /// Masters, servers, loads and regions in transition (`status`).
    pub async fn cluster_status(&self) -> Result<basalt_api::ClusterStatus> {
        let s = rpc!(
            self,
            Idempotence::Idempotent,
            get_cluster_status,
            pb::Empty {}
        )?;
        Ok(status_from_pb(s))
    }

    /// Moves a region (full or encoded name) to `dest`, or where the master chooses.
    pub async fn move_region(&self, region: &[u8], dest: Option<&str>) -> Result<()> {
        let r = pb::MoveRequest {
            region: Bytes::copy_from_slice(region),
            destination: dest.unwrap_or_default().to_owned(),
        };
        rpc!(self, Idempotence::Idempotent, move_region, r.clone()).map(drop)
    }

    pub async fn assign(&self, region: &[u8]) -> Result<()> {
        let r = pb::RegionRequest {
            region: Bytes::copy_from_slice(region),
        };
        rpc!(self, Idempotence::Idempotent, assign, r.clone()).map(drop)
    }

    pub async fn unassign(&self, region: &[u8]) -> Result<()> {
        let r = pb::RegionRequest {
            region: Bytes::copy_from_slice(region),
        };
        rpc!(self, Idempotence::Idempotent, unassign, r.clone()).map(drop)
    }

    /// Runs the balancer; whether it ran.
    pub async fn balance(&self) -> Result<bool> {
        Ok(rpc!(self, Idempotence::Idempotent, balance, pb::Empty {})?.value)
    }

    /// Switches the balancer; the previous setting.
    pub async fn balance_switch(&self, on: bool) -> Result<bool> {
        let r = pb::BoolRequest { value: on };
        Ok(rpc!(self, Idempotence::Idempotent, balance_switch, r)?.value)
    }

    pub async fn decommission(&self, servers: &[String], offload: bool) -> Result<()> {
        let r = pb::DecommissionRequest {
            servers: servers.to_vec(),
            offload,
        };
        rpc!(self, Idempotence::Idempotent, decommission, r.clone()).map(drop)
    }

    pub async fn recommission(&self, server: &str) -> Result<()> {
        let r = pb::NameRequest {
            name: server.to_owned(),
        };
        rpc!(self, Idempotence::Idempotent, recommission, r.clone()).map(drop)
    }

    pub async fn list_decommissioned(&self) -> Result<Vec<String>> {
        Ok(rpc!(
            self,
            Idempotence::Idempotent,
            list_decommissioned,
            pb::Empty {}
        )?
        .names)
    }
}

fn status_from_pb(s: pb::ClusterStatus) -> basalt_api::ClusterStatus {
    basalt_api::ClusterStatus {
        cluster_id: s.cluster_id,
        master: s.master,
        backup_masters: s.backup_masters,
        servers: s
            .servers
            .into_iter()
            .map(|x| basalt_api::ServerStatus {
                name: x.name,
                regions: usize::try_from(x.regions).unwrap_or(usize::MAX),
                load: x
                    .load
                    .as_ref()
                    .map(basalt_proto::schema::region_load_from_pb)
                    .unwrap_or_default(),
            })
            .collect(),
        dead_servers: s.dead_servers,
        recoveries: s.recoveries,
        decommissioned: s.decommissioned,
        in_transition: s.in_transition,
        balancer_on: s.balancer_on,
        answered_by: s.answered_by,
    }
}
