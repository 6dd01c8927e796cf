//! `BufferedMutator`: puts and deletes gathered client-side and sent as batches.

use basalt_model::ops::Mutation;
use basalt_model::{Error, Result};

use crate::Table;

/// Buffers mutations and sends them in batches once the buffer passes the write-buffer size
/// (HBase's `hbase.client.write.buffer`), and on `flush` and `close`.
#[derive(Debug)]
pub struct BufferedMutator {
    table: Table,
    buffer: Vec<Mutation>,
    bytes: usize,
    limit: usize,
}

fn size_of(m: &Mutation) -> usize {
    let cells: usize = match m {
        Mutation::Put(p) => p.cells.iter().map(basalt_model::Cell::heap_size).sum(),
        Mutation::Delete(d) => d.markers.iter().map(basalt_model::Cell::heap_size).sum(),
        Mutation::Increment(i) => i
            .columns
            .iter()
            .map(|(f, q, _)| f.len() + q.len() + 8)
            .sum(),
        Mutation::Append(a) => a
            .columns
            .iter()
            .map(|(f, q, v)| f.len() + q.len() + v.len())
            .sum(),
    };
    cells + m.row().len()
}

impl BufferedMutator {
    /// A mutator writing to `table`.
    #[must_use]
    pub fn new(table: Table) -> BufferedMutator {
        let limit = table.write_buffer_bytes();
        BufferedMutator {
            table,
            buffer: Vec::new(),
            bytes: 0,
            limit,
        }
    }

    /// Adds a mutation; sends the buffer when it is full.
    ///
    /// # Errors
    /// The mutation is invalid, or a send failed (see [`BufferedMutator::flush`]).
    pub async fn mutate(&mut self, m: Mutation) -> Result<()> {
        m.validate()?;
        self.bytes += size_of(&m);
        self.buffer.push(m);
        if self.bytes >= self.limit {
            self.flush().await?;
        }
        Ok(())
    }

    /// Sends everything buffered.
    ///
    /// # Errors
    /// The first failed mutation's error (the others were applied); the buffer is empty
    /// afterwards either way, as HBase's `RetriesExhaustedWithDetailsException` leaves it.
    pub async fn flush(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.buffer);
        self.bytes = 0;
        let results = self.table.batch(batch).await?;
        let failed: Vec<Error> = results.into_iter().filter_map(Result::err).collect();
        match failed.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Flushes and ends the mutator.
    ///
    /// # Errors
    /// As [`BufferedMutator::flush`].
    pub async fn close(mut self) -> Result<()> {
        self.flush().await
    }
}
