//! The table admin API (`google.bigtable.admin.v2.BigtableTableAdmin`) over HBase's Admin:
//! tables, their families with GC rules and value types, DropRowRange, and consistency
//! tokens. Methods this file does not define (snapshots, backups, authorized views, IAM,
//! schema bundles) answer UNIMPLEMENTED.

use basalt_bigtable_proto::google::bigtable::admin::v2::{
    bigtable_table_admin_server::BigtableTableAdmin, drop_row_range_request,
    modify_column_families_request::modification::Mod, table::TimestampGranularity, table::View,
    CheckConsistencyRequest, CheckConsistencyResponse, ColumnFamily, CreateTableRequest,
    DeleteTableRequest, DropRowRangeRequest, GenerateConsistencyTokenRequest,
    GenerateConsistencyTokenResponse, GetTableRequest, ListTablesRequest, ListTablesResponse,
    ModifyColumnFamiliesRequest, Table, UpdateTableRequest,
};
use basalt_bigtable_proto::google::longrunning::{operation, Operation};
use basalt_model::ops::{Delete, Mutation, Scan};
use basalt_model::{TableDescriptor, TableName};
use bytes::Bytes;
use prost::Message;
use tonic::{Request, Response, Status};

use super::mutate::FOREVER_MS;
use super::schema::{apply_family, column_family, family_descriptor};
use super::{instance, status, table_id, table_name, Gateway};

/// Table metadata key of Bigtable's deletion protection.
const DELETION_PROTECTION_KEY: &str = "BIGTABLE_DELETION_PROTECTION";
/// A consistency token names the table it was made for.
const TOKEN_PREFIX: &str = "basalt-consistency-";
/// Rows deleted per batch by DropRowRange with a prefix.
const DROP_BATCH_ROWS: usize = 1000;

fn is_family_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && !id.starts_with(['-', '.'])
}

fn check_family_id(id: &str) -> Result<(), Status> {
    if is_family_id(id) {
        Ok(())
    } else {
        Err(Status::invalid_argument(format!(
            "Invalid column family id {id:?}: 1 to 64 characters of [-_.a-zA-Z0-9], not starting with '-' or '.'"
        )))
    }
}

/// A table as Bigtable shows it in `view` (SCHEMA_VIEW when unspecified).
fn table_view(full_name: String, desc: &TableDescriptor, view: i32) -> Result<Table, Status> {
    let mut t = Table {
        name: full_name,
        ..Table::default()
    };
    if view == View::NameOnly as i32 {
        return Ok(t);
    }
    for (name, f) in &desc.families {
        t.column_families.insert(
            String::from_utf8_lossy(name).into_owned(),
            column_family(f)?,
        );
    }
    t.granularity = TimestampGranularity::Millis as i32;
    t.deletion_protection = desc
        .metadata
        .get(DELETION_PROTECTION_KEY)
        .is_some_and(|v| v == "true");
    Ok(t)
}

fn describe(gw: &Gateway, name: &TableName) -> Result<TableDescriptor, Status> {
    gw.conn.admin().describe(name).map_err(|e| status(&e))
}

fn create_table(gw: &Gateway, req: &CreateTableRequest) -> Result<Table, Status> {
    let parent = instance(&req.parent)?;
    let name = table_id(&req.table_id)?;
    let table = req.table.clone().unwrap_or_default();
    let mut desc = TableDescriptor::new(&name, Vec::new());
    // A Bigtable table may have no family yet; HBase allows it with the sanity checks off.
    desc.configuration
        .insert("hbase.table.sanity.checks".into(), "false".into());
    for (id, cf) in &table.column_families {
        check_family_id(id)?;
        desc.add_family(family_descriptor(id, cf)?)
            .map_err(|e| status(&e))?;
    }
    if table.deletion_protection {
        desc.metadata
            .insert(DELETION_PROTECTION_KEY.into(), "true".into());
    }
    let mut splits: Vec<Bytes> = req.initial_splits.iter().map(|s| s.key.clone()).collect();
    if splits.iter().any(Bytes::is_empty) {
        return Err(Status::invalid_argument(
            "An initial split key must not be empty",
        ));
    }
    splits.sort();
    splits.dedup();
    gw.conn
        .admin()
        .create_table(desc, &splits)
        .map_err(|e| status(&e))?;
    gw.forget(&name);
    let full = format!("{parent}/tables/{}", req.table_id);
    table_view(full, &describe(gw, &name)?, View::SchemaView as i32)
}

fn list_tables(gw: &Gateway, req: &ListTablesRequest) -> Result<ListTablesResponse, Status> {
    let parent = instance(&req.parent)?;
    if req.page_size < 0 {
        return Err(Status::invalid_argument("page_size must not be negative"));
    }
    let admin = gw.conn.admin();
    let mut names = admin
        .list_namespace_tables(basalt_model::name::DEFAULT_NAMESPACE)
        .map_err(|e| status(&e))?;
    names.sort();
    let start = if req.page_token.is_empty() {
        0
    } else {
        names.partition_point(|n| *n <= req.page_token)
    };
    let size = if req.page_size == 0 {
        usize::MAX
    } else {
        req.page_size as usize
    };
    let page: Vec<&String> = names.iter().skip(start).take(size).collect();
    let next = if start + page.len() < names.len() {
        page.last().map(|n| (*n).clone()).unwrap_or_default()
    } else {
        String::new()
    };
    let view = if req.view == View::Unspecified as i32 {
        View::NameOnly as i32
    } else {
        req.view
    };
    let mut tables = Vec::with_capacity(page.len());
    for n in page {
        let full = format!("{parent}/tables/{n}");
        let t = if view == View::NameOnly as i32 {
            Table {
                name: full,
                ..Table::default()
            }
        } else {
            table_view(full, &describe(gw, &table_id(n)?)?, view)?
        };
        tables.push(t);
    }
    Ok(ListTablesResponse {
        tables,
        next_page_token: next,
    })
}

fn delete_table(gw: &Gateway, full: &str) -> Result<(), Status> {
    let name = table_name(full)?;
    let desc = describe(gw, &name)?;
    if desc
        .metadata
        .get(DELETION_PROTECTION_KEY)
        .is_some_and(|v| v == "true")
    {
        return Err(Status::failed_precondition(format!(
            "Table {full} is protected from deletion; turn deletion_protection off first"
        )));
    }
    let admin = gw.conn.admin();
    if admin.is_enabled(&name).map_err(|e| status(&e))? {
        admin.disable_table(&name).map_err(|e| status(&e))?;
    }
    admin.delete_table(&name).map_err(|e| status(&e))?;
    gw.forget(&name);
    Ok(())
}

/// UpdateTable: only `deletion_protection` is a setting Basalt keeps; the others name
/// features it does not have, and are refused.
fn update_table(gw: &Gateway, req: &UpdateTableRequest) -> Result<Table, Status> {
    let table = req
        .table
        .as_ref()
        .ok_or_else(|| Status::invalid_argument("UpdateTable needs a table"))?;
    let name = table_name(&table.name)?;
    let paths = req
        .update_mask
        .as_ref()
        .map(|m| m.paths.clone())
        .unwrap_or_default();
    if paths.is_empty() {
        return Err(Status::invalid_argument("UpdateTable needs an update_mask"));
    }
    let mut desc = describe(gw, &name)?;
    for p in &paths {
        match p.as_str() {
            "deletion_protection" => {
                if table.deletion_protection {
                    desc.metadata
                        .insert(DELETION_PROTECTION_KEY.into(), "true".into());
                } else {
                    desc.metadata.remove(DELETION_PROTECTION_KEY);
                }
            }
            other => {
                return Err(Status::invalid_argument(format!(
                    "UpdateTable cannot change {other:?}: only deletion_protection is supported"
                )))
            }
        }
    }
    gw.conn.admin().modify_table(desc).map_err(|e| status(&e))?;
    gw.forget(&name);
    table_view(
        table.name.clone(),
        &describe(gw, &name)?,
        View::SchemaView as i32,
    )
}

fn modify_column_families(
    gw: &Gateway,
    req: &ModifyColumnFamiliesRequest,
) -> Result<Table, Status> {
    let name = table_name(&req.name)?;
    let mut desc = describe(gw, &name)?;
    if req.modifications.is_empty() {
        return Err(Status::invalid_argument("No modifications provided"));
    }
    for m in &req.modifications {
        check_family_id(&m.id)?;
        let key = Bytes::copy_from_slice(m.id.as_bytes());
        match &m.r#mod {
            Some(Mod::Create(cf)) => {
                if desc.families.contains_key(&key) {
                    return Err(Status::already_exists(format!(
                        "Column family {:?} already exists in table {}",
                        m.id, req.name
                    )));
                }
                desc.families.insert(key, family_descriptor(&m.id, cf)?);
            }
            Some(Mod::Update(cf)) => {
                let Some(d) = desc.families.get_mut(&key) else {
                    return Err(family_not_found(&m.id, &req.name));
                };
                update_family(d, cf, m.update_mask.as_ref())?;
            }
            Some(Mod::Drop(true)) => {
                if desc.families.remove(&key).is_none() {
                    return Err(family_not_found(&m.id, &req.name));
                }
            }
            Some(Mod::Drop(false)) | None => {
                return Err(Status::invalid_argument(format!(
                    "The modification of column family {:?} must create, update or drop it",
                    m.id
                )))
            }
        }
    }
    desc.configuration
        .insert("hbase.table.sanity.checks".into(), "false".into());
    gw.conn.admin().modify_table(desc).map_err(|e| status(&e))?;
    gw.forget(&name);
    table_view(
        req.name.clone(),
        &describe(gw, &name)?,
        View::SchemaView as i32,
    )
}

fn family_not_found(id: &str, table: &str) -> Status {
    Status::not_found(format!("Column family {id:?} not found in table {table}"))
}

/// An update changes the GC rule (the value type of a family cannot change).
fn update_family(
    d: &mut basalt_model::ColumnFamilyDescriptor,
    cf: &ColumnFamily,
    mask: Option<&prost_types::FieldMask>,
) -> Result<(), Status> {
    if let Some(m) = mask.filter(|m| !m.paths.is_empty()) {
        if let Some(p) = m.paths.iter().find(|p| p.as_str() != "gc_rule") {
            return Err(Status::invalid_argument(format!(
                "A column family update can change only gc_rule, not {p:?}"
            )));
        }
    }
    let current = column_family(d)?;
    if cf.value_type.is_some() && cf.value_type != current.value_type {
        return Err(Status::invalid_argument(
            "The value_type of a column family cannot change",
        ));
    }
    let update = ColumnFamily {
        gc_rule: cf.gc_rule.clone(),
        value_type: None,
    };
    apply_family(d, &update)
}

/// DropRowRange: every row (HBase's truncate, keeping the regions) or the rows with a
/// prefix (deleted in batches; NEW_VERSION_BEHAVIOR markers remove only what exists).
fn drop_row_range(gw: &Gateway, req: &DropRowRangeRequest) -> Result<(), Status> {
    let name = table_name(&req.name)?;
    match &req.target {
        Some(drop_row_range_request::Target::DeleteAllDataFromTable(true)) => {
            let admin = gw.conn.admin();
            describe(gw, &name)?;
            admin.disable_table(&name).map_err(|e| status(&e))?;
            let truncated = admin.truncate_table(&name, true);
            gw.forget(&name);
            truncated.map_err(|e| status(&e))
        }
        Some(drop_row_range_request::Target::RowKeyPrefix(p)) if !p.is_empty() => {
            let table = gw.schema(&name)?.table.clone();
            let mut scanner = table
                .scan(Scan::new().with_row_prefix(p.clone()))
                .map_err(|e| status(&e))?;
            let mut batch = Vec::with_capacity(DROP_BATCH_ROWS);
            loop {
                let row = scanner.next_row().map_err(|e| status(&e))?;
                if let Some(r) = &row {
                    batch.push(Mutation::Delete(Delete::at(r.row_bytes(), FOREVER_MS)));
                }
                if batch.len() >= DROP_BATCH_ROWS || (row.is_none() && !batch.is_empty()) {
                    for r in table.batch(std::mem::take(&mut batch)) {
                        r.map_err(|e| status(&e))?;
                    }
                }
                if row.is_none() {
                    return Ok(());
                }
            }
        }
        _ => Err(Status::invalid_argument(
            "DropRowRange needs a non-empty row_key_prefix or delete_all_data_from_table",
        )),
    }
}

/// A consistency token: writes acknowledged here are durable and visible at once (one copy,
/// no replication), so a token is consistent as soon as it exists; it names its table.
fn consistency_token(gw: &Gateway, full: &str) -> Result<String, Status> {
    let name = table_name(full)?;
    describe(gw, &name)?;
    Ok(format!("{TOKEN_PREFIX}{}", super::read::now_ms()))
}

fn check_consistency(gw: &Gateway, req: &CheckConsistencyRequest) -> Result<bool, Status> {
    let name = table_name(&req.name)?;
    describe(gw, &name)?;
    let valid = req
        .consistency_token
        .strip_prefix(TOKEN_PREFIX)
        .is_some_and(|t| t.parse::<u64>().is_ok());
    if !valid {
        return Err(Status::invalid_argument(format!(
            "Invalid consistency token {:?}",
            req.consistency_token
        )));
    }
    Ok(true)
}

/// A finished long-running operation whose result is `table`.
fn done_operation(table: &Table) -> Operation {
    Operation {
        name: format!("{}/operations/update", table.name),
        metadata: None,
        done: true,
        result: Some(operation::Result::Response(prost_types::Any {
            type_url: "type.googleapis.com/google.bigtable.admin.v2.Table".into(),
            value: table.encode_to_vec(),
        })),
    }
}

#[tonic::async_trait]
impl BigtableTableAdmin for Gateway {
    async fn create_table(
        &self,
        request: Request<CreateTableRequest>,
    ) -> Result<Response<Table>, Status> {
        let req = request.into_inner();
        self.blocking("CreateTable", move |gw| create_table(gw, &req))
            .await
    }

    async fn list_tables(
        &self,
        request: Request<ListTablesRequest>,
    ) -> Result<Response<ListTablesResponse>, Status> {
        let req = request.into_inner();
        self.blocking("ListTables", move |gw| list_tables(gw, &req))
            .await
    }

    async fn get_table(
        &self,
        request: Request<GetTableRequest>,
    ) -> Result<Response<Table>, Status> {
        let req = request.into_inner();
        self.blocking("GetTable", move |gw| {
            let name = table_name(&req.name)?;
            table_view(req.name.clone(), &describe(gw, &name)?, req.view)
        })
        .await
    }

    async fn update_table(
        &self,
        request: Request<UpdateTableRequest>,
    ) -> Result<Response<Operation>, Status> {
        let req = request.into_inner();
        self.blocking("UpdateTable", move |gw| {
            Ok(done_operation(&update_table(gw, &req)?))
        })
        .await
    }

    async fn delete_table(
        &self,
        request: Request<DeleteTableRequest>,
    ) -> Result<Response<()>, Status> {
        let req = request.into_inner();
        self.blocking("DeleteTable", move |gw| delete_table(gw, &req.name))
            .await
    }

    async fn modify_column_families(
        &self,
        request: Request<ModifyColumnFamiliesRequest>,
    ) -> Result<Response<Table>, Status> {
        let req = request.into_inner();
        self.blocking("ModifyColumnFamilies", move |gw| {
            modify_column_families(gw, &req)
        })
        .await
    }

    async fn drop_row_range(
        &self,
        request: Request<DropRowRangeRequest>,
    ) -> Result<Response<()>, Status> {
        let req = request.into_inner();
        self.blocking("DropRowRange", move |gw| drop_row_range(gw, &req))
            .await
    }

    async fn generate_consistency_token(
        &self,
        request: Request<GenerateConsistencyTokenRequest>,
    ) -> Result<Response<GenerateConsistencyTokenResponse>, Status> {
        let req = request.into_inner();
        self.blocking("GenerateConsistencyToken", move |gw| {
            Ok(GenerateConsistencyTokenResponse {
                consistency_token: consistency_token(gw, &req.name)?,
            })
        })
        .await
    }

    async fn check_consistency(
        &self,
        request: Request<CheckConsistencyRequest>,
    ) -> Result<Response<CheckConsistencyResponse>, Status> {
        let req = request.into_inner();
        self.blocking("CheckConsistency", move |gw| {
            Ok(CheckConsistencyResponse {
                consistent: check_consistency(gw, &req)?,
            })
        })
        .await
    }
}
