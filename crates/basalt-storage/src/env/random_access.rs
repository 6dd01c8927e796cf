//! Files read at arbitrary offsets (store files), on the local file system or as objects on
//! shared storage.

#![allow(clippy::disallowed_methods)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt_model::{Error, Result};

use super::read_buffer::{ReadBuffer, BLOCK_READS};
use super::ObjectStore;

/// A file read at arbitrary offsets (store files).
#[derive(Debug)]
pub struct RandomAccessFile {
    pub(super) source: Source,
    pub(super) len: u64,
    pub(super) path: PathBuf,
}

/// Where a [`RandomAccessFile`]'s bytes come from.
#[derive(Debug)]
pub(super) enum Source {
    Local(File),
    /// An object (store and key): each read is a range get.
    Object(Arc<dyn ObjectStore>, String),
}

impl RandomAccessFile {
    /// Reads exactly `len` bytes at `offset`; a local file's block-sized reads land in a
    /// pooled buffer (`read_buffer`).
    ///
    /// # Errors
    /// `Corruption` when the range is past the end of the file; `Io` otherwise.
    pub fn read_at(&self, offset: u64, len: usize) -> Result<ReadBuffer> {
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|end| end > self.len) {
            return Err(Error::corruption(
                "file range",
                &self.path,
                format!(
                    "{len} bytes at offset {offset} run past the end ({} bytes)",
                    self.len
                ),
            ));
        }
        let err = |e| Error::io(format!("reading {}", self.path.display()), e);
        match &self.source {
            Source::Local(file) => BLOCK_READS.read_exact_at(file, offset, len).map_err(err),
            Source::Object(store, key) => Ok(ReadBuffer::from(
                store.get_range(key, offset, len).map_err(err)?.to_vec(),
            )),
        }
    }

    /// The file's length in bytes.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::super::Env;

    #[test]
    fn reads_return_exactly_the_bytes_asked_for() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("f");
        // Longer than one read of most kernels' page-cache copies, and not a multiple of a
        // page: the last read is a short one.
        let bytes: Vec<u8> = (0..(3 << 20) + 5).map(|i: u32| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).expect("written");
        let f = Env::default().open(&path).expect("opened");
        assert_eq!(f.len(), bytes.len() as u64);
        for (at, len) in [
            (0, 0),
            (0, 1),
            (7, 65_536),
            (4_095, 8_193),
            (0, bytes.len()),
            (bytes.len() - 3, 3),
        ] {
            let read = f.read_at(at as u64, len).expect("read");
            assert_eq!(read.len(), len);
            assert_eq!(*read, bytes[at..at + len], "{len} bytes at {at}");
        }
        let past = f.read_at(bytes.len() as u64 - 2, 3);
        assert!(
            matches!(past, Err(basalt_model::Error::Corruption { .. })),
            "{past:?}"
        );
    }
}
