//! The protobuf messages of HBase's REST API (`hbase-rest`'s `CellMessage.proto`,
//! `CellSetMessage.proto`, `ScannerMessage.proto`, ...), declared here with their field
//! numbers so `application/x-protobuf` bodies are byte-compatible with HBase's.

#![allow(clippy::doc_markdown)]

/// `Cell`: `row` is unused inside a `CellSet`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Cell {
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub row: Option<bytes::Bytes>,
    #[prost(bytes = "bytes", optional, tag = "2")]
    pub column: Option<bytes::Bytes>,
    #[prost(int64, optional, tag = "3")]
    pub timestamp: Option<i64>,
    #[prost(bytes = "bytes", optional, tag = "4")]
    pub data: Option<bytes::Bytes>,
}

/// `CellSet.Row`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Row {
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub key: Option<bytes::Bytes>,
    #[prost(message, repeated, tag = "2")]
    pub values: Vec<Cell>,
}

/// `CellSet`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CellSet {
    #[prost(message, repeated, tag = "1")]
    pub rows: Vec<Row>,
}

/// `Scanner`: a scanner's specification.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Scanner {
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub start_row: Option<bytes::Bytes>,
    #[prost(bytes = "bytes", optional, tag = "2")]
    pub end_row: Option<bytes::Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "3")]
    pub columns: Vec<bytes::Bytes>,
    #[prost(int32, optional, tag = "4")]
    pub batch: Option<i32>,
    #[prost(int64, optional, tag = "5")]
    pub start_time: Option<i64>,
    #[prost(int64, optional, tag = "6")]
    pub end_time: Option<i64>,
    #[prost(int32, optional, tag = "7")]
    pub max_versions: Option<i32>,
    #[prost(string, optional, tag = "8")]
    pub filter: Option<String>,
    #[prost(int32, optional, tag = "9")]
    pub caching: Option<i32>,
    #[prost(string, repeated, tag = "10")]
    pub labels: Vec<String>,
    #[prost(bool, optional, tag = "11")]
    pub cache_blocks: Option<bool>,
    #[prost(bool, optional, tag = "13")]
    pub include_start_row: Option<bool>,
    #[prost(bool, optional, tag = "14")]
    pub include_stop_row: Option<bool>,
}

/// A `name = value` attribute of `TableSchema` and `ColumnSchema`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Attribute {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `ColumnSchema`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ColumnSchema {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub attrs: Vec<Attribute>,
    #[prost(int32, optional, tag = "3")]
    pub ttl: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub max_versions: Option<i32>,
    #[prost(string, optional, tag = "5")]
    pub compression: Option<String>,
}

/// `TableSchema`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableSchema {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub attrs: Vec<Attribute>,
    #[prost(message, repeated, tag = "3")]
    pub columns: Vec<ColumnSchema>,
    #[prost(bool, optional, tag = "4")]
    pub in_memory: Option<bool>,
    #[prost(bool, optional, tag = "5")]
    pub read_only: Option<bool>,
}

/// `TableList`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableList {
    #[prost(string, repeated, tag = "1")]
    pub name: Vec<String>,
}

/// `TableInfo.Region`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableRegion {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(bytes = "bytes", optional, tag = "2")]
    pub start_key: Option<bytes::Bytes>,
    #[prost(bytes = "bytes", optional, tag = "3")]
    pub end_key: Option<bytes::Bytes>,
    #[prost(int64, optional, tag = "4")]
    pub id: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub location: Option<String>,
}

/// `TableInfo`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableInfo {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub regions: Vec<TableRegion>,
}

/// `Namespaces`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Namespaces {
    #[prost(string, repeated, tag = "1")]
    pub namespace: Vec<String>,
}

/// `NamespaceProperties.Property`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Property {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `NamespaceProperties`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamespaceProperties {
    #[prost(message, repeated, tag = "1")]
    pub props: Vec<Property>,
}

/// `Version`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Version {
    #[prost(string, optional, tag = "1")]
    pub rest_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub jvm_version: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub os_version: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub server_version: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub jersey_version: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub version: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub revision: Option<String>,
}

/// `StorageClusterStatus.Region`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusRegion {
    #[prost(bytes = "bytes", tag = "1")]
    pub name: bytes::Bytes,
    #[prost(int32, optional, tag = "2")]
    pub stores: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub storefiles: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub storefile_size_mb: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub mem_store_size_mb: Option<i32>,
    #[prost(int64, optional, tag = "6")]
    pub storefile_index_size_kb: Option<i64>,
    #[prost(int64, optional, tag = "7")]
    pub read_requests_count: Option<i64>,
    #[prost(int64, optional, tag = "8")]
    pub write_requests_count: Option<i64>,
}

/// `StorageClusterStatus.Node`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusNode {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int64, optional, tag = "2")]
    pub start_code: Option<i64>,
    #[prost(int64, optional, tag = "3")]
    pub requests: Option<i64>,
    #[prost(int32, optional, tag = "4")]
    pub heap_size_mb: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub max_heap_size_mb: Option<i32>,
    #[prost(message, repeated, tag = "6")]
    pub regions: Vec<StatusRegion>,
}

/// `StorageClusterStatus`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StorageClusterStatus {
    #[prost(message, repeated, tag = "1")]
    pub live_nodes: Vec<StatusNode>,
    #[prost(string, repeated, tag = "2")]
    pub dead_nodes: Vec<String>,
    #[prost(int32, optional, tag = "3")]
    pub regions: Option<i32>,
    #[prost(int64, optional, tag = "4")]
    pub requests: Option<i64>,
    #[prost(double, optional, tag = "5")]
    pub average_load: Option<f64>,
}
