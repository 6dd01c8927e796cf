//! Printing byte strings the way HBase does (`Bytes.toStringBinary`).

use std::fmt::Write;

/// Renders bytes as HBase's `Bytes.toStringBinary`: printable ASCII stays as it is, every other
/// byte becomes `\xHH` with upper-case hex. Error messages and the shell use this so that binary
/// keys read the same as they do in HBase.
#[must_use]
pub fn to_string_binary(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        // HBase keeps 0-9, A-Z, a-z and the printable punctuation listed in Bytes.java; that set
        // is exactly the printable ASCII range minus the backslash... except that HBase keeps
        // the backslash too. We follow HBase: " `~!@#$%^&*()-_=+[]{}|;:'\",.<>/?" are kept.
        if (0x20..0x7f).contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "\\x{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::to_string_binary;

    #[test]
    fn printable_kept_and_binary_escaped_in_upper_hex() {
        assert_eq!(to_string_binary(b"row-1"), "row-1");
        assert_eq!(to_string_binary(&[0, 1, 0xab, b'a']), "\\x00\\x01\\xABa");
        assert_eq!(
            to_string_binary(&1u64.to_be_bytes()),
            "\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01"
        );
    }
}
