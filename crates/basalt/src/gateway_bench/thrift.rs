//! The benchmark's Thrift client: Apache Thrift's library and the generated HBase (Thrift1)
//! client, over the buffered transport and the binary protocol, happybase's defaults.

use std::collections::BTreeMap;
use std::net::TcpStream;

use anyhow::Context;
use hbase_thrift::hbase::{BatchMutation, ColumnDescriptor, HbaseSyncClient, Mutation};
use hbase_thrift::hbase::{THbaseSyncClient, TRowResult};
use thrift::protocol::{TBinaryInputProtocol, TBinaryOutputProtocol};
use thrift::transport::{ReadHalf, WriteHalf};
use thrift::transport::{TBufferedReadTransport, TBufferedWriteTransport, TIoChannel, TTcpChannel};

use super::{Cells, GatewayClient};

type Input = TBinaryInputProtocol<TBufferedReadTransport<ReadHalf<TTcpChannel>>>;
type Output = TBinaryOutputProtocol<TBufferedWriteTransport<WriteHalf<TTcpChannel>>>;

/// One connection to a Thrift gateway, and the table its data calls go to.
pub struct ThriftClient {
    client: HbaseSyncClient<Input, Output>,
    table: Vec<u8>,
}

impl ThriftClient {
    /// Connects to the gateway at `addr`.
    pub fn connect(addr: &str) -> anyhow::Result<ThriftClient> {
        let stream = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
        // Without it, a request written in two segments waits out the peer's delayed ACK.
        stream.set_nodelay(true)?;
        let (r, w) = TTcpChannel::with_stream(stream).split()?;
        Ok(ThriftClient {
            client: HbaseSyncClient::new(
                TBinaryInputProtocol::new(TBufferedReadTransport::new(r), true),
                TBinaryOutputProtocol::new(TBufferedWriteTransport::new(w), true),
            ),
            table: Vec::new(),
        })
    }

    /// This client, its data calls going to `table`.
    pub fn on_table(mut self, table: &str) -> ThriftClient {
        self.table = table.as_bytes().to_vec();
        self
    }

    /// Drops `table` if it exists and creates it with `family`, one version kept; data calls
    /// then go to it.
    pub fn recreate_table(&mut self, table: &str, family: &str) -> anyhow::Result<()> {
        let name = table.as_bytes().to_vec();
        if self.client.get_table_names()?.contains(&name) {
            if self.client.is_table_enabled(name.clone())? {
                self.client.disable_table(name.clone())?;
            }
            self.client.delete_table(name.clone())?;
        }
        // Hbase.thrift's defaults but one version; TTL i32::MAX is HBase's "forever".
        let family = ColumnDescriptor::new(
            format!("{family}:").into_bytes(),
            1,
            "NONE".to_owned(),
            false,
            "ROW".to_owned(),
            0,
            0,
            true,
            i32::MAX,
        );
        self.client.create_table(name.clone(), vec![family])?;
        self.table = name;
        Ok(())
    }

    /// Writes every row in one `mutateRows`.
    pub fn put_rows(&mut self, rows: Vec<(Vec<u8>, Cells)>) -> anyhow::Result<()> {
        let batches = rows
            .into_iter()
            .map(|(row, cells)| BatchMutation::new(row, mutations(&cells)))
            .collect();
        self.client
            .mutate_rows(self.table.clone(), batches, BTreeMap::new())?;
        Ok(())
    }

    /// Reads `rows` rows from `start` on, as happybase's `scan(row_start, limit)` does: a
    /// scanner opened, one fetch, closed. How many rows it read.
    pub fn scan_rows(&mut self, start: &[u8], rows: u64) -> anyhow::Result<usize> {
        let id = self.client.scanner_open(
            self.table.clone(),
            start.to_vec(),
            Vec::new(),
            BTreeMap::new(),
        )?;
        let got = self.client.scanner_get_list(id, i32::try_from(rows)?)?;
        self.client.scanner_close(id)?;
        Ok(got.len())
    }
}

fn mutations(cells: &[(Vec<u8>, Vec<u8>)]) -> Vec<Mutation> {
    cells
        .iter()
        .map(|(column, value)| Mutation::new(false, column.clone(), value.clone(), true))
        .collect()
}

fn cells_of(r: &TRowResult) -> usize {
    r.columns.as_ref().map_or(0, BTreeMap::len)
}

impl GatewayClient for ThriftClient {
    fn put(&mut self, row: &[u8], cells: &[(Vec<u8>, Vec<u8>)]) -> anyhow::Result<()> {
        self.client.mutate_row(
            self.table.clone(),
            row.to_vec(),
            mutations(cells),
            BTreeMap::new(),
        )?;
        Ok(())
    }

    fn get(&mut self, row: &[u8]) -> anyhow::Result<usize> {
        let rows = self
            .client
            .get_row(self.table.clone(), row.to_vec(), BTreeMap::new())?;
        Ok(rows.iter().map(cells_of).sum())
    }

    fn scan(&mut self, start: &[u8], stop: &[u8], page_rows: u32) -> anyhow::Result<u64> {
        let id = self.client.scanner_open_with_stop(
            self.table.clone(),
            start.to_vec(),
            stop.to_vec(),
            Vec::new(),
            BTreeMap::new(),
        )?;
        let page = i32::try_from(page_rows)?;
        let mut rows = 0;
        loop {
            let got = self.client.scanner_get_list(id, page)?;
            if got.is_empty() {
                break;
            }
            rows += got.len() as u64;
        }
        self.client.scanner_close(id)?;
        Ok(rows)
    }
}
