//! A gRPC call's deadline as its request carries it: the `grpc-timeout` header of gRPC's
//! HTTP/2 protocol, written by the client, and read alike by the client (which keeps each
//! call's deadline itself) and by the server (which abandons a call whose caller stopped
//! waiting).

use std::time::Duration;

use tonic::codegen::http::HeaderMap;

/// The call's deadline from its `grpc-timeout` header (an integer of up to eight digits and
/// a unit: H, M, S, m, u or n), as gRPC's HTTP/2 protocol defines it.
pub fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    grpc_timeout_value(headers.get("grpc-timeout")?.as_bytes())
}

/// The deadline a `grpc-timeout` header's `value` names ([`grpc_timeout`]).
pub fn grpc_timeout_value(value: &[u8]) -> Option<Duration> {
    let (unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

/// A `grpc-timeout` value: at most eight digits and a unit.
#[derive(Clone, Copy, Debug)]
pub struct TimeoutValue {
    bytes: [u8; 9],
    len: usize,
}

impl TimeoutValue {
    /// `limit` in the finest unit whose count fits in eight digits (a count too large for
    /// hours is capped), rounded down as gRPC's own clients do.
    #[must_use]
    pub fn of(limit: Duration) -> TimeoutValue {
        const MAX: u64 = 99_999_999;
        let units: [(u64, u8); 6] = [
            (1, b'n'),
            (1_000, b'u'),
            (1_000_000, b'm'),
            (1_000_000_000, b'S'),
            (60_000_000_000, b'M'),
            (3_600_000_000_000, b'H'),
        ];
        // Past 2^64 ns (585 years), as past every unit, the count is capped in hours.
        let (count, unit) = u64::try_from(limit.as_nanos())
            .ok()
            .and_then(|nanos| {
                units
                    .iter()
                    .map(|&(size, unit)| (nanos / size, unit))
                    .find(|&(count, _)| count <= MAX)
            })
            .unwrap_or((MAX, b'H'));
        // The digits, last first, then turned round: no allocation on a call's path.
        let mut bytes = [0; 9];
        let mut len = 0;
        let mut rest = count;
        loop {
            bytes[len] = b'0' + u8::try_from(rest % 10).unwrap_or_default();
            len += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        bytes[..len].reverse();
        bytes[len] = unit;
        TimeoutValue {
            bytes,
            len: len + 1,
        }
    }

    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_read_as_the_protocol_defines_them() {
        let read = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert("grpc-timeout", v.parse().unwrap());
            grpc_timeout(&h)
        };
        assert_eq!(read("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(read("3M"), Some(Duration::from_secs(180)));
        assert_eq!(read("60S"), Some(Duration::from_secs(60)));
        assert_eq!(read("1500m"), Some(Duration::from_millis(1500)));
        assert_eq!(read("7u"), Some(Duration::from_micros(7)));
        assert_eq!(read("99999999n"), Some(Duration::from_nanos(99_999_999)));
        for bad in [
            "",
            "S",
            "123456789S",
            "10x",
            "-1S",
            "+1S",
            "1.5S",
            "1é",
            "é",
            "１S",
        ] {
            assert_eq!(read(bad), None, "{bad:?}");
        }
        assert_eq!(grpc_timeout(&HeaderMap::new()), None);
    }

    /// Written deadlines read back as themselves in the finest unit that holds them, and
    /// never longer than asked (within a part in 100,000: a unit a thousand times coarser
    /// takes over only past eight digits).
    #[test]
    fn written_timeouts_read_back_within_their_unit() {
        let read = |d: Duration| {
            let value = TimeoutValue::of(d);
            let mut h = HeaderMap::new();
            h.insert(
                "grpc-timeout",
                std::str::from_utf8(value.as_bytes())
                    .unwrap()
                    .parse()
                    .unwrap(),
            );
            (
                std::str::from_utf8(value.as_bytes()).unwrap().to_owned(),
                grpc_timeout(&h).unwrap(),
            )
        };
        assert_eq!(
            read(Duration::from_millis(30)),
            ("30000000n".to_owned(), Duration::from_millis(30))
        );
        assert_eq!(
            read(Duration::from_secs(60)),
            ("60000000u".to_owned(), Duration::from_secs(60))
        );
        assert_eq!(read(Duration::from_secs(3600)).0, "3600000m");
        assert_eq!(read(Duration::ZERO).0, "0n");
        assert_eq!(read(Duration::from_secs(200_000_000)).0, "3333333M");
        assert_eq!(read(Duration::from_secs(10_000_000_000)).0, "2777777H");
        assert_eq!(read(Duration::MAX).0, "99999999H");
        for d in [1, 999, 123_456_789, 98_765_432_109, 7_200_000_000_001] {
            let d = Duration::from_nanos(d);
            let (_, back) = read(d);
            assert!(
                back <= d && d - back < d / 100_000 + Duration::from_nanos(1),
                "{d:?} read back as {back:?}"
            );
        }
    }
}
