//! Output as the HBase shell prints it (formatter.rb): two-column rows, `Bytes.toStringBinary`
//! text, timestamps as Java's `LocalDateTime.toString`, `Took N seconds` footers.

use basalt_model::bytes_fmt::to_string_binary;
use basalt_model::{Cell, CellType};
use chrono::{Datelike, TimeZone, Timelike};

/// Writes rows of two columns. With a width of 0 (no terminal) nothing is padded; with a
/// terminal width w the first column takes w/4 and long text wraps, as formatter.rb does.
#[derive(Debug)]
pub struct Formatter {
    pub width: usize,
    /// Timestamps as epoch milliseconds (`hbase.shell.timestamp.format.epoch`) instead of
    /// ISO date-times.
    pub epoch_timestamps: bool,
}

impl Formatter {
    /// A header line: the two titles, no inset (without its newline; wrapped text gives
    /// several lines).
    #[must_use]
    pub fn header(&self, a: &str, b: &str) -> String {
        self.row(a, b, false)
    }

    /// A data line: inset by one space.
    #[must_use]
    pub fn line(&self, a: &str, b: &str) -> String {
        self.row(a, b, true)
    }

    fn row(&self, a: &str, b: &str, inset: bool) -> String {
        let (w1, w2) = if self.width == 0 {
            (0, 0)
        } else {
            let w1 = self.width / 4;
            (w1, self.width.saturating_sub(w1 + 2))
        };
        let (s1, s2) = (split(w1, a), split(w2, b));
        let mut lines = Vec::new();
        for i in 0..s1.len().max(s2.len()) {
            let mut line = String::new();
            if inset {
                line.push(' ');
            }
            pad(&mut line, w1, s1.get(i).map_or("", String::as_str));
            if !inset {
                line.push(' ');
            }
            line.push(' ');
            pad(&mut line, w2, s2.get(i).map_or("", String::as_str));
            lines.push(line);
        }
        lines.join("\n")
    }

    /// `column=f:q, timestamp=..., value=v` (scan) or without the column (get).
    #[must_use]
    pub fn cell_text(&self, c: &Cell, with_column: bool) -> String {
        let mut s = String::new();
        if with_column {
            s.push_str(&format!("column={}, ", column(c)));
        }
        s.push_str(&format!("timestamp={}, ", self.timestamp(c.timestamp)));
        if c.cell_type == CellType::Put {
            s.push_str(&format!("value={}", to_string_binary(c.value())));
        } else {
            s.push_str(&format!("type={}", type_name(c.cell_type)));
        }
        s
    }

    /// A timestamp as the shell prints it.
    #[must_use]
    pub fn timestamp(&self, ms: i64) -> String {
        if self.epoch_timestamps {
            return ms.to_string();
        }
        local_date_time(ms)
    }
}

fn pad(line: &mut String, width: usize, s: &str) {
    line.push_str(s);
    for _ in s.chars().count()..width {
        line.push(' ');
    }
}

fn split(width: usize, s: &str) -> Vec<String> {
    if width == 0 || s.chars().count() <= width {
        return vec![s.to_owned()];
    }
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(width).map(|c| c.iter().collect()).collect()
}

/// `family:qualifier`, each through `toStringBinary`.
#[must_use]
pub fn column(c: &Cell) -> String {
    format!(
        "{}:{}",
        to_string_binary(&c.family),
        to_string_binary(c.qualifier())
    )
}

fn type_name(t: CellType) -> &'static str {
    match t {
        CellType::Put => "Put",
        CellType::Delete => "Delete",
        CellType::DeleteColumn => "DeleteColumn",
        CellType::DeleteFamily => "DeleteFamily",
        CellType::DeleteFamilyVersion => "DeleteFamilyVersion",
        _ => "Maximum",
    }
}

/// Epoch milliseconds as Java's `LocalDateTime.toString()` in the local time zone:
/// `2021-07-08T10:20:30.123`; seconds are left out when they and the millis are zero, millis
/// when zero.
#[must_use]
pub fn local_date_time(ms: i64) -> String {
    date_time_in(ms, &chrono::Local)
}

fn date_time_in<Tz: TimeZone>(ms: i64, tz: &Tz) -> String {
    let Some(t) = tz.timestamp_millis_opt(ms).single() else {
        return ms.to_string();
    };
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute()
    );
    let millis = ms.rem_euclid(1000);
    if t.second() != 0 || millis != 0 {
        s.push_str(&format!(":{:02}", t.second()));
    }
    if millis != 0 {
        s.push_str(&format!(".{millis:03}"));
    }
    s
}

/// `Took 0.0123 seconds`.
#[must_use]
pub fn took(secs: f64) -> String {
    format!("Took {secs:.4} seconds")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(f: &Formatter, a: &str, b: &str, header: bool) -> String {
        let s = if header { f.header(a, b) } else { f.line(a, b) };
        s + "\n"
    }

    #[test]
    fn without_a_terminal_nothing_is_padded() {
        let f = Formatter {
            width: 0,
            epoch_timestamps: true,
        };
        assert_eq!(render(&f, "ROW", "COLUMN+CELL", true), "ROW  COLUMN+CELL\n");
        assert_eq!(
            render(&f, "r1", "column=f:q, timestamp=1, value=v", false),
            " r1 column=f:q, timestamp=1, value=v\n"
        );
    }

    #[test]
    fn on_a_terminal_the_first_column_is_a_quarter_and_text_wraps() {
        let f = Formatter {
            width: 40,
            epoch_timestamps: true,
        };
        let s = render(&f, "r1", "x".repeat(40).as_str(), false);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with(" r1         x"), "{s}");
    }

    #[test]
    fn timestamps_print_as_java_local_date_times() {
        let utc = |ms| date_time_in(ms, &chrono::Utc);
        assert_eq!(utc(3), "1970-01-01T00:00:00.003");
        assert_eq!(utc(60_000), "1970-01-01T00:01");
        assert_eq!(utc(61_000), "1970-01-01T00:01:01");
        assert_eq!(utc(1_625_739_630_123), "2021-07-08T10:20:30.123");
        let f = Formatter {
            width: 0,
            epoch_timestamps: true,
        };
        assert_eq!(f.timestamp(1_421_762_485_768), "1421762485768");
        assert_eq!(took(0.01234), "Took 0.0123 seconds");
    }
}
