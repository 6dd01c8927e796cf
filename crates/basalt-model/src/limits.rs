//! Size limits shared by client-side validation and the server (SEMANTICS.md §4.3, §J).

/// Longest row key HBase accepts: `Short.MAX_VALUE` (HConstants.MAX_ROW_LENGTH).
pub const MAX_ROW_LENGTH: usize = 32_767;

/// Longest column-family name: its length is stored in one byte, HBase caps it at 127.
pub const MAX_FAMILY_LENGTH: usize = 127;

/// Default largest row a read returns whole (`hbase.table.max.rowsize`, 1 GiB).
pub const DEFAULT_MAX_ROW_SIZE_BYTES: usize = 1 << 30;

/// Default largest cell, key components plus value (`hbase.server.keyvalue.maxsize`).
pub const DEFAULT_MAX_CELL_SIZE_BYTES: usize = 10 * 1024 * 1024;

/// Checks a cell against the largest cell size (`max_bytes`, 0 for no limit), as HBase's
/// client does before sending and its server again on arrival.
///
/// # Errors
/// `IllegalArgument` "KeyValue size too large".
pub fn check_cell_size(c: &crate::Cell, max_bytes: usize) -> crate::Result<()> {
    let size = c.serialized_size();
    if max_bytes > 0 && size > max_bytes {
        return Err(crate::Error::illegal(format!(
            "KeyValue size too large: cell of {size} bytes exceeds the limit of {max_bytes} bytes"
        )));
    }
    Ok(())
}
