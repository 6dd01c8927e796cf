//! Table schemas and regions on the wire.

use basalt_model::region::{RegionInfo, RegionLoad};
use basalt_model::{
    BloomType, ColumnFamilyDescriptor, Compression, DataBlockEncoding, Error, KeepDeletedCells,
    Result, TableDescriptor, TableName,
};

use crate::pb;

fn bad(field: &str, v: &str) -> Error {
    Error::illegal(format!("malformed request: {field} {v:?}"))
}

#[must_use]
pub fn family_to_pb(f: &ColumnFamilyDescriptor) -> pb::ColumnFamily {
    pb::ColumnFamily {
        name: f.name.clone(),
        max_versions: f.max_versions,
        min_versions: f.min_versions,
        ttl_seconds: f.ttl_seconds,
        keep_deleted_cells: f.keep_deleted_cells.hbase_name().to_owned(),
        bloom_filter: f.bloom_filter.hbase_name().to_owned(),
        block_size_bytes: f.block_size_bytes,
        block_cache: f.block_cache,
        in_memory: f.in_memory,
        compression: f.compression.hbase_name().to_owned(),
        data_block_encoding: f.data_block_encoding.hbase_name().to_owned(),
        replication_scope: f.replication_scope,
        new_version_behavior: f.new_version_behavior,
        configuration: f.configuration.clone().into_iter().collect(),
        metadata: f.metadata.clone().into_iter().collect(),
    }
}

pub fn family_from_pb(f: pb::ColumnFamily) -> Result<ColumnFamilyDescriptor> {
    let mut out = ColumnFamilyDescriptor::new(f.name);
    out.max_versions = f.max_versions;
    out.min_versions = f.min_versions;
    out.ttl_seconds = f.ttl_seconds;
    out.keep_deleted_cells = KeepDeletedCells::from_hbase_name(&f.keep_deleted_cells)
        .ok_or_else(|| bad("KEEP_DELETED_CELLS", &f.keep_deleted_cells))?;
    out.bloom_filter = BloomType::from_hbase_name(&f.bloom_filter)
        .ok_or_else(|| bad("BLOOMFILTER", &f.bloom_filter))?;
    out.block_size_bytes = f.block_size_bytes;
    out.block_cache = f.block_cache;
    out.in_memory = f.in_memory;
    out.compression = Compression::from_hbase_name(&f.compression)
        .ok_or_else(|| bad("COMPRESSION", &f.compression))?;
    out.data_block_encoding = DataBlockEncoding::from_hbase_name(&f.data_block_encoding)
        .ok_or_else(|| bad("DATA_BLOCK_ENCODING", &f.data_block_encoding))?;
    out.replication_scope = f.replication_scope;
    out.new_version_behavior = f.new_version_behavior;
    out.configuration = f.configuration.into_iter().collect();
    out.metadata = f.metadata.into_iter().collect();
    Ok(out)
}

#[must_use]
pub fn schema_to_pb(t: &TableDescriptor) -> pb::TableSchema {
    pb::TableSchema {
        name: t.table_name().to_string(),
        families: t.families.values().map(family_to_pb).collect(),
        max_filesize_bytes: t.max_filesize_bytes,
        memstore_flushsize_bytes: t.memstore_flushsize_bytes,
        durability: crate::convert::durability_to_pb(t.durability),
        read_only: t.read_only,
        compaction_enabled: t.compaction_enabled,
        split_enabled: t.split_enabled,
        merge_enabled: t.merge_enabled,
        configuration: t.configuration.clone().into_iter().collect(),
        metadata: t.metadata.clone().into_iter().collect(),
    }
}

pub fn schema_from_pb(t: pb::TableSchema) -> Result<TableDescriptor> {
    let name = TableName::parse(&t.name)?;
    let families = t
        .families
        .into_iter()
        .map(family_from_pb)
        .collect::<Result<Vec<_>>>()?;
    let mut out = TableDescriptor::with_families(&name, families)?;
    // Zero is proto3's "not set": HBase's defaults then, not a size the checks refuse.
    if t.max_filesize_bytes != 0 {
        out.max_filesize_bytes = t.max_filesize_bytes;
    }
    if t.memstore_flushsize_bytes != 0 {
        out.memstore_flushsize_bytes = t.memstore_flushsize_bytes;
    }
    out.durability = crate::convert::durability_from_pb(t.durability)?;
    out.read_only = t.read_only;
    out.compaction_enabled = t.compaction_enabled;
    out.split_enabled = t.split_enabled;
    out.merge_enabled = t.merge_enabled;
    out.configuration = t.configuration.into_iter().collect();
    out.metadata = t.metadata.into_iter().collect();
    Ok(out)
}

#[must_use]
pub fn region_to_pb(table: &TableName, r: &RegionInfo) -> pb::Region {
    pb::Region {
        id: r.id,
        start_key: r.start_key.clone(),
        end_key: r.end_key.clone(),
        name: r.region_name(table),
        encoded_name: r.encoded_name(table),
        ..pb::Region::default()
    }
}

/// A region with where it is served and its load.
#[must_use]
pub fn region_load_to_pb(
    table: &TableName,
    r: &RegionInfo,
    load: &RegionLoad,
    server: &str,
) -> pb::Region {
    pb::Region {
        server: server.to_owned(),
        store_files: u32::try_from(load.store_files).unwrap_or(u32::MAX),
        store_file_bytes: load.store_file_bytes,
        memstore_bytes: load.memstore_bytes,
        read_requests: load.read_requests,
        write_requests: load.write_requests,
        failed_open: load
            .failed_open
            .as_deref()
            .map(basalt_model::error::redact_paths)
            .unwrap_or_default(),
        ..region_to_pb(table, r)
    }
}

/// The load a region message carries.
#[must_use]
pub fn region_load_from_pb(r: &pb::Region) -> RegionLoad {
    RegionLoad {
        store_files: r.store_files as usize,
        store_file_bytes: r.store_file_bytes,
        memstore_bytes: r.memstore_bytes,
        read_requests: r.read_requests,
        write_requests: r.write_requests,
        failed_open: (!r.failed_open.is_empty()).then(|| r.failed_open.clone()),
    }
}

#[must_use]
pub fn region_from_pb(r: pb::Region) -> RegionInfo {
    RegionInfo {
        id: r.id,
        start_key: r.start_key,
        end_key: r.end_key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_attribute_survives_the_wire() {
        let mut f = ColumnFamilyDescriptor::new("f")
            .with_max_versions(4)
            .with_min_versions(1)
            .with_ttl_seconds(60)
            .with_keep_deleted_cells(KeepDeletedCells::Ttl)
            .with_bloom_filter(BloomType::RowCol)
            .with_block_size_bytes(4096)
            .with_block_cache(false)
            .with_in_memory(true)
            .with_compression(Compression::Zstd)
            .with_new_version_behavior(true);
        f.data_block_encoding = DataBlockEncoding::FastDiff;
        f.replication_scope = 1;
        f.configuration.insert("k".into(), "v".into());
        f.metadata.insert("m".into(), "n".into());
        assert_eq!(family_from_pb(family_to_pb(&f)).unwrap(), f);
        let plain = ColumnFamilyDescriptor::new("g");
        assert_eq!(family_from_pb(family_to_pb(&plain)).unwrap(), plain);
    }
}
