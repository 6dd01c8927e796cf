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

/// Parses HBase's `Bytes.toBytesBinary`: `\xHH` (two hex digits, either case) is that byte,
/// every other character stands for itself (its low byte, as Java's `(byte) ch`). A backslash
/// not followed by `x` and two hex digits is dropped, as HBase drops a bogus escape.
#[must_use]
pub fn to_bytes_binary(s: &str) -> Vec<u8> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        if ch == '\\' && chars.get(i + 1) == Some(&'x') {
            let hex = |j: usize| chars.get(j).and_then(|c| c.to_digit(16));
            if let (Some(hi), Some(lo)) = (hex(i + 2), hex(i + 3)) {
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(0));
                i += 4;
                continue;
            }
            i += 1;
            continue;
        }
        out.push(u32::from(ch).to_le_bytes()[0]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{to_bytes_binary, to_string_binary};

    #[test]
    fn binary_strings_parse_as_hbase_parses_them() {
        assert_eq!(to_bytes_binary("row-1"), b"row-1");
        assert_eq!(to_bytes_binary("\\x00\\x01\\xaBa"), [0, 1, 0xab, b'a']);
        assert_eq!(
            to_bytes_binary("a\\xZZ"),
            b"axZZ",
            "a bogus escape drops its backslash"
        );
        assert_eq!(to_bytes_binary("\\x4"), b"x4");
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(to_bytes_binary(&to_string_binary(&all)), all);
    }

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
