//! HPACK's Huffman code (RFC 7541, appendix B), decoded.
//!
//! The code is canonical: within one length the codes count up in the order of their
//! symbols, and each length's first code follows the last code of the length before it,
//! shifted. So the lengths alone define it, and a code is decoded by reading bits until
//! they form a code of their length: at `len` bits the codes of that length are
//! `FIRST[len] .. FIRST[len] + COUNT[len]`, and every prefix of a longer code lies above
//! them.

/// Each symbol's code length in bits: the bytes 0–255, then EOS (256).
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/// The longest code.
const LONGEST: usize = 30;

/// The code's tables, built from [`LENGTHS`] once, at compile time.
struct Canonical {
    /// The first code of each length.
    first: [u32; LONGEST + 1],
    /// How many codes each length has.
    count: [u32; LONGEST + 1],
    /// Where each length's symbols start in `symbols`.
    start: [u16; LONGEST + 1],
    /// The symbols, by length, then by value.
    symbols: [u16; 257],
    /// For each value of the next eight bits: the symbol whose code of eight bits or fewer
    /// they start with, and that code's length; a length of 0 where a longer code starts.
    short: [(u8, u8); 256],
}

const CODE: Canonical = canonical();

const fn canonical() -> Canonical {
    let mut count = [0_u32; LONGEST + 1];
    let mut s = 0;
    while s < LENGTHS.len() {
        count[LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let mut first = [0_u32; LONGEST + 1];
    let mut start = [0_u16; LONGEST + 1];
    let (mut code, mut at) = (0_u32, 0_u16);
    let mut len = 1;
    while len <= LONGEST {
        first[len] = code;
        start[len] = at;
        // Within 257 symbols and 30 bits: no overflow.
        #[allow(clippy::cast_possible_truncation)]
        {
            at += count[len] as u16;
        }
        code = (code + count[len]) << 1;
        len += 1;
    }
    let mut symbols = [0_u16; 257];
    let mut short = [(0_u8, 0_u8); 256];
    let mut next = start;
    let mut s = 0;
    while s < LENGTHS.len() {
        let len = LENGTHS[s] as usize;
        let code = first[len] + (next[len] - start[len]) as u32;
        #[allow(clippy::cast_possible_truncation)]
        {
            symbols[next[len] as usize] = s as u16;
            if len <= 8 {
                // Every byte that starts with this code.
                let from = (code as usize) << (8 - len);
                let mut b = from;
                while b < from + (1 << (8 - len)) {
                    short[b] = (s as u8, len as u8);
                    b += 1;
                }
            }
        }
        next[len] += 1;
        s += 1;
    }
    Canonical {
        first,
        count,
        start,
        symbols,
        short,
    }
}

/// Appends the bytes `encoded` decodes to, to `out`.
///
/// The bits are read into a 64-bit window; a code of eight bits or fewer (every digit,
/// lower-case letter and common sign) is found by one lookup of the window's first byte, a
/// longer one by its length.
///
/// # Errors
/// The bits hold EOS, or end in more than seven bits of padding, or in padding that is not
/// EOS's first bits (all ones): RFC 7541 section 5.2 makes each a decoding error.
pub fn decode(encoded: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let mut input = encoded.iter();
    // The next `bits` bits, from the top down.
    let (mut window, mut bits) = (0_u64, 0_u32);
    loop {
        while bits <= 56 {
            let Some(&byte) = input.next() else {
                break;
            };
            window |= u64::from(byte) << (56 - bits);
            bits += 8;
        }
        if bits == 0 {
            return Ok(());
        }
        let (symbol, len) = CODE.short[(window >> 56) as usize];
        let len = u32::from(len);
        if len != 0 && len <= bits {
            out.push(symbol);
            window <<= len;
            bits -= len;
            continue;
        }
        match long_code(window, bits) {
            Some((symbol, len)) => {
                let Ok(byte) = u8::try_from(symbol) else {
                    return Err("a Huffman string holds EOS");
                };
                out.push(byte);
                window <<= len;
                bits -= len;
            }
            None => return padding(window, bits),
        }
    }
}

/// The code of more than eight bits the window starts with, if its `bits` bits hold one.
fn long_code(window: u64, bits: u32) -> Option<(u16, u32)> {
    for len in 9..=bits.min(LONGEST as u32) {
        let code = (window >> (64 - len)) as u32;
        let index = code.wrapping_sub(CODE.first[len as usize]);
        if index < CODE.count[len as usize] {
            let at = usize::from(CODE.start[len as usize]) + index as usize;
            return Some((CODE.symbols[at], len));
        }
    }
    None
}

/// Checks the last `bits` bits, which hold no code, as a string's padding.
fn padding(window: u64, bits: u32) -> Result<(), &'static str> {
    if bits >= LONGEST as u32 {
        // Every code of 30 bits or fewer was tried: these bits are none.
        return Err("a Huffman string holds bits that are no code");
    }
    if bits > 7 {
        return Err("a Huffman string ends in more than seven bits of padding");
    }
    if window >> (64 - bits) != (1 << bits) - 1 {
        return Err("a Huffman string's padding is not all ones");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(hex: &str) -> Result<String, &'static str> {
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let mut out = Vec::new();
        decode(&bytes, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    /// The Huffman strings of RFC 7541's examples (appendix C.4 and C.6) decode to their
    /// text.
    #[test]
    fn the_rfc_examples_decode() {
        for (hex, text) in [
            ("f1e3c2e5f23a6ba0ab90f4ff", "www.example.com"),
            ("a8eb10649cbf", "no-cache"),
            ("25a849e95ba97d7f", "custom-key"),
            ("25a849e95bb8e8b4bf", "custom-value"),
            ("6402", "302"),
            ("aec3771a4b", "private"),
            (
                "d07abe941054d444a8200595040b8166e082a62d1bff",
                "Mon, 21 Oct 2013 20:13:21 GMT",
            ),
            (
                "9d29ad171863c78f0b97c8e9ae82ae43d3",
                "https://www.example.com",
            ),
            ("640eff", "307"),
            (
                "94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
                "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
            ),
            ("", ""),
        ] {
            assert_eq!(decoded(hex).as_deref(), Ok(text), "{hex}");
        }
    }

    /// Each symbol's code, assigned canonically as RFC 7541's table lists them.
    fn codes() -> [u32; 257] {
        let mut order: Vec<usize> = (0..257).collect();
        order.sort_by_key(|&s| (LENGTHS[s], s));
        let mut codes = [0_u32; 257];
        let (mut code, mut prev) = (0_u32, LENGTHS[order[0]]);
        for (i, &s) in order.iter().enumerate() {
            if i > 0 {
                code = (code + 1) << (LENGTHS[s] - prev);
            }
            prev = LENGTHS[s];
            codes[s] = code;
        }
        codes
    }

    /// `bytes` Huffman-coded, padded with ones.
    fn encode(bytes: &[u8]) -> Vec<u8> {
        let codes = codes();
        let mut bits: Vec<bool> = Vec::new();
        for &b in bytes {
            let len = LENGTHS[usize::from(b)];
            bits.extend((0..len).rev().map(|i| codes[usize::from(b)] >> i & 1 == 1));
        }
        while !bits.len().is_multiple_of(8) {
            bits.push(true);
        }
        bits.chunks(8)
            .map(|byte| byte.iter().fold(0_u8, |acc, &bit| acc << 1 | u8::from(bit)))
            .collect()
    }

    /// Every byte's code, built from the lengths alone, decodes to that byte; so the lengths
    /// and the canonical order match: a code out of order would decode to another byte.
    #[test]
    fn every_byte_decodes_from_its_code() {
        let codes = codes();
        // Spot checks against the RFC's table: '0' is 00000, 'a' 00011, EOS thirty ones.
        assert_eq!(
            (codes[usize::from(b'0')], LENGTHS[usize::from(b'0')]),
            (0, 5)
        );
        assert_eq!(
            (codes[usize::from(b'a')], LENGTHS[usize::from(b'a')]),
            (3, 5)
        );
        assert_eq!((codes[256], LENGTHS[256]), (0x3fff_ffff, 30));
        for byte in 0..=255_u8 {
            let mut out = Vec::new();
            decode(&encode(&[byte]), &mut out).unwrap();
            assert_eq!(out, [byte]);
        }
    }

    proptest::proptest! {
        /// Any bytes, short codes and long ones mixed, decode to themselves.
        #[test]
        fn any_bytes_decode_to_themselves(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let mut out = Vec::new();
            decode(&encode(&bytes), &mut out).unwrap();
            proptest::prop_assert_eq!(out, bytes);
        }
    }

    /// EOS, long padding, padding of zeros and bits of no code are each refused.
    #[test]
    fn malformed_strings_are_refused() {
        // EOS: thirty ones, then two of padding.
        assert_eq!(decoded("ffffffff"), Err("a Huffman string holds EOS"));
        // 'a' (00011), then eleven ones: more than seven bits of padding.
        assert!(decoded("1fff").unwrap_err().contains("more than seven"));
        // 'a' then three zeros.
        assert!(decoded("18").unwrap_err().contains("not all ones"));
    }
}
