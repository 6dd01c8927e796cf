//! Split keys for pre-split tables: `NUMREGIONS` with `SPLITALGO` (HBase's `RegionSplitter`
//! algorithms) and `SPLITS_FILE` (one key per line, in `Bytes.toBytesBinary` form).

use bytes::Bytes;

use crate::bytes_fmt::to_bytes_binary;
use crate::{Error, Result};

/// HBase's split algorithms, by the names `SPLITALGO` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitAlgorithm {
    /// Rows are 8 lowercase hex digits, `00000000` to `ffffffff` (MD5-prefixed keys).
    HexStringSplit,
    /// Rows are 8 decimal digits, `00000000` to `99999999`.
    DecimalStringSplit,
    /// Rows are 8 raw bytes, `00` to `ff` each (uniformly random binary keys).
    UniformSplit,
}

impl std::str::FromStr for SplitAlgorithm {
    type Err = Error;

    fn from_str(s: &str) -> Result<SplitAlgorithm> {
        let short = s.rsplit(['$', '.']).next().unwrap_or(s);
        match short {
            "HexStringSplit" => Ok(SplitAlgorithm::HexStringSplit),
            "DecimalStringSplit" => Ok(SplitAlgorithm::DecimalStringSplit),
            "UniformSplit" => Ok(SplitAlgorithm::UniformSplit),
            _ => Err(Error::illegal(format!(
                "Split algorithm {s} is not known: HexStringSplit, DecimalStringSplit or \
                 UniformSplit"
            ))),
        }
    }
}

impl SplitAlgorithm {
    /// The `num_regions - 1` split keys that cut the algorithm's key space into `num_regions`
    /// equal ranges (the last takes the remainder), as `RegionSplitter.split(n)` does.
    ///
    /// # Errors
    /// `IllegalArgument` when `num_regions` is below 2 or above the key space.
    pub fn split(self, num_regions: u32) -> Result<Vec<Bytes>> {
        if num_regions < 2 {
            return Err(Error::illegal("Number of regions must be greater than 1"));
        }
        let n = u128::from(num_regions);
        let (range, render): (u128, fn(u128) -> Bytes) = match self {
            SplitAlgorithm::HexStringSplit => (1 << 32, |v| Bytes::from(format!("{v:08x}"))),
            SplitAlgorithm::DecimalStringSplit => (100_000_000, |v| Bytes::from(format!("{v:08}"))),
            SplitAlgorithm::UniformSplit => (1 << 64, |v| {
                Bytes::copy_from_slice(&u64::try_from(v).unwrap_or(u64::MAX).to_be_bytes())
            }),
        };
        if n > range {
            return Err(Error::illegal(format!(
                "split granularity ({num_regions}) is greater than the range ({range})"
            )));
        }
        let size = range / n;
        Ok((1..n).map(|i| render(size * i)).collect())
    }
}

/// The split keys of a `SPLITS_FILE`: one per line, line ends removed, `\xHH` escapes decoded;
/// blank lines are skipped.
#[must_use]
pub fn parse_splits_file(text: &str) -> Vec<Bytes> {
    text.lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(|l| Bytes::from(to_bytes_binary(l)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(keys: &[Bytes]) -> Vec<String> {
        keys.iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect()
    }

    #[test]
    fn hex_string_split_matches_region_splitter() {
        let a = SplitAlgorithm::HexStringSplit;
        assert_eq!(
            strings(&a.split(4).unwrap()),
            ["40000000", "80000000", "c0000000"]
        );
        assert_eq!(strings(&a.split(3).unwrap()), ["55555555", "aaaaaaaa"]);
        assert_eq!(a.split(16).unwrap().len(), 15);
    }

    #[test]
    fn decimal_and_uniform_splits() {
        let d = SplitAlgorithm::DecimalStringSplit.split(4).unwrap();
        assert_eq!(strings(&d), ["25000000", "50000000", "75000000"]);
        let u = SplitAlgorithm::UniformSplit.split(4).unwrap();
        assert_eq!(u[0][..], [0x40, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(u[2][..], [0xc0, 0, 0, 0, 0, 0, 0, 0]);
        let third = SplitAlgorithm::UniformSplit.split(3).unwrap();
        assert_eq!(third[0][..], [0x55; 8]);
        assert_eq!(third[1][..], [0xaa; 8]);
    }

    #[test]
    fn names_and_bad_counts() {
        for (name, want) in [
            ("HexStringSplit", SplitAlgorithm::HexStringSplit),
            ("UniformSplit", SplitAlgorithm::UniformSplit),
            (
                "org.apache.hadoop.hbase.util.RegionSplitter$HexStringSplit",
                SplitAlgorithm::HexStringSplit,
            ),
        ] {
            assert_eq!(name.parse::<SplitAlgorithm>().unwrap(), want);
        }
        assert!("MySplit".parse::<SplitAlgorithm>().is_err());
        let err = SplitAlgorithm::HexStringSplit.split(1).unwrap_err();
        assert!(err.to_string().contains("must be greater than 1"), "{err}");
    }

    #[test]
    fn splits_files_are_lines_of_binary_strings() {
        let keys = parse_splits_file("a\n\\x00b\r\n\nzz\n");
        assert_eq!(keys, [&b"a"[..], &b"\x00b"[..], &b"zz"[..]]);
    }
}
