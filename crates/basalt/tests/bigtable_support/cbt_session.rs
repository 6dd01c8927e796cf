//! A scripted `cbt` session against `basalt server`: tables with splits, families with GC
//! rules of every kind (max versions, max age, a union, an intersection), cells at explicit
//! timestamps and at the server's, reads with each of `cbt`'s filters, lookups, counts and
//! deletes; then the HBase shell reads the same table. Every output is asserted whole; the
//! one timestamp the server chose is checked to lie in the span of its `set`.
//!
//! The GC rules are Bigtable's, applied on every read: a cell of 1970 is past any age limit,
//! so `old` shows only the cell written at the server's time, `either` (age or more than two
//! versions) shows nothing, and `both` (age and more than one version) keeps its newest.

use super::answer::now_micros;
use super::{run_cbt, run_shell, BasaltServer};

const RULE: &str = "----------------------------------------";

/// When a cell of the session was written: at an explicit microsecond within 1970's first
/// second, or at the server's time.
#[derive(Clone, Copy)]
enum At {
    Micros(i64),
    Now,
}
use At::{Micros, Now};

/// A row as the session expects it: its key and its cells (column, time, value).
type Expected<'a> = (&'a str, &'a [(&'a str, At, &'a str)]);

/// Rows as `cbt read` and `cbt lookup` print them.
fn rows(rows: &[Expected]) -> String {
    let mut out = String::new();
    for (key, cells) in rows {
        out += &format!("{RULE}\n{key}\n");
        for (column, at, value) in *cells {
            let when = match at {
                Micros(m) => {
                    assert!(*m < 1_000_000, "the session's times are within one second");
                    format!("1970/01/01-00:00:00.{m:06}")
                }
                Now => "NOW".to_owned(),
            };
            out += &format!("  {column:<40} @ {when}\n    \"{value}\"\n");
        }
        out += "\n";
    }
    out
}

/// Days from 1970-01-01 to a civil date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Microseconds of `Y?M?D?h?m?s.frac` (any separators; the fraction's digits as given).
fn parse_time(text: &str) -> i64 {
    let parts: Vec<&str> = text.split(|c: char| !c.is_ascii_digit()).collect();
    let n = |i: usize| parts[i].parse::<i64>().unwrap();
    let secs = days_from_civil(n(0), n(1), n(2)) * 86_400 + n(3) * 3600 + n(4) * 60 + n(5);
    let frac = parts[6];
    let micros = n(6) * 10_i64.pow(6 - u32::try_from(frac.len()).unwrap());
    secs * 1_000_000 + micros
}

/// `out` with every timestamp after 1970 replaced by `NOW`, and those timestamps.
fn mask_now(out: &str, marker: &str, end: char) -> (String, Vec<i64>) {
    let mut times = Vec::new();
    let lines: Vec<String> = out
        .lines()
        .map(|l| match l.find(marker) {
            Some(i) if !l[i + marker.len()..].starts_with("1970") => {
                let rest = &l[i + marker.len()..];
                let len = rest.find(end).unwrap_or(rest.len());
                times.push(parse_time(&rest[..len]));
                format!("{}{marker}NOW{}", &l[..i], &rest[len..])
            }
            _ => l.to_owned(),
        })
        .collect();
    (
        lines.join("\n") + if out.ends_with('\n') { "\n" } else { "" },
        times,
    )
}

/// The session's server and the span of the one `set` that writes at the server's time.
struct Session {
    server: BasaltServer,
    now_from: i64,
    now_to: i64,
}

impl Session {
    /// `cbt ARGS`, which must succeed: its output.
    fn cbt(&self, args: &[&str]) -> String {
        let (ok, out) = run_cbt(&self.server.bigtable, args);
        assert!(ok, "cbt {args:?} failed: {out}");
        out
    }

    /// Asserts `times` lie in the span of the `set` at the server's time.
    fn within(&self, times: Vec<i64>) {
        let from = self.now_from - self.now_from % 1000;
        for t in times {
            assert!(
                (from..=self.now_to).contains(&t),
                "{t} is not within {from}..={}",
                self.now_to
            );
        }
    }

    /// `cbt read events ARGS`, the server's time masked.
    fn read(&self, args: &[&str]) -> String {
        let (text, times) = mask_now(
            &self.cbt(&[&["read", "events"][..], args].concat()),
            "@ ",
            '\n',
        );
        self.within(times);
        text
    }

    /// The HBase shell's output for `script`, the server's time and the timings masked.
    fn shell(&self, script: &str) -> String {
        let out = run_shell(&self.server.native, script);
        let (text, times) = mask_now(&out, "timestamp=", ',');
        self.within(times);
        text.lines()
            .filter(|l| !l.starts_with("Took "))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

const A1: Expected = (
    "a1",
    &[
        ("cf:c1", Micros(3000), "v3"),
        ("cf:c1", Micros(2000), "v2"),
        ("cf:c2", Micros(1000), "w"),
        ("hist:h", Micros(2000), "h2"),
        ("hist:h", Micros(1000), "h1"),
    ],
);
const B2: Expected = (
    "b2",
    &[("both:k", Micros(2000), "k2"), ("cf:c1", Micros(5000), "x")],
);
const H7: Expected = (
    "h7",
    &[("cf:c1", Micros(4000), "y"), ("old:o", Now, "fresh")],
);
const Q9: Expected = ("q9", &[("hist:h", Micros(7000), "z")]);

pub fn run() {
    let mut s = Session {
        server: BasaltServer::start(),
        now_from: 0,
        now_to: 0,
    };
    families(&s);
    // The table's splits are its regions' boundaries.
    assert_eq!(
        s.shell("get_splits 'events'\n"),
        "Total number of splits = 3\ng\np"
    );
    cells(&mut s);
    reads(&s);
    // The HBase shell sees the same cells (its scan applies HBase's retention, which keeps
    // what the GC rules keep here), with times in milliseconds.
    assert_eq!(
        s.shell("scan 'events', {VERSIONS => 3}\n"),
        "ROW  COLUMN+CELL\n\
         \x20a1 column=cf:c1, timestamp=1970-01-01T00:00:00.003, value=v3\n\
         \x20a1 column=cf:c1, timestamp=1970-01-01T00:00:00.002, value=v2\n\
         \x20a1 column=cf:c2, timestamp=1970-01-01T00:00:00.001, value=w\n\
         \x20a1 column=hist:h, timestamp=1970-01-01T00:00:00.002, value=h2\n\
         \x20a1 column=hist:h, timestamp=1970-01-01T00:00:00.001, value=h1\n\
         \x20b2 column=both:k, timestamp=1970-01-01T00:00:00.002, value=k2\n\
         \x20b2 column=cf:c1, timestamp=1970-01-01T00:00:00.005, value=x\n\
         \x20h7 column=cf:c1, timestamp=1970-01-01T00:00:00.004, value=y\n\
         \x20h7 column=old:o, timestamp=NOW, value=fresh\n\
         \x20q9 column=hist:h, timestamp=1970-01-01T00:00:00.007, value=z\n\
         4 row(s)"
    );
    deletes(&s);
}

/// A table with splits, then families with every kind of GC rule.
fn families(s: &Session) {
    let created = s.cbt(&[
        "createtable",
        "events",
        "families=cf:maxversions=2,old:maxage=1d",
        "splits=g,p",
    ]);
    assert_eq!(created, "");
    assert_eq!(s.cbt(&["ls"]), "events\n");
    for family in ["hist", "both", "either"] {
        assert_eq!(s.cbt(&["createfamily", "events", family]), "");
    }
    assert_eq!(
        s.cbt(&["setgcpolicy", "events", "hist", "maxversions=3"]),
        ""
    );
    let both = ["maxage=1d", "and", "maxversions=1"];
    let either = ["maxage=1d", "or", "maxversions=2"];
    assert_eq!(
        s.cbt(&[&["setgcpolicy", "events", "both"][..], &both].concat()),
        ""
    );
    assert_eq!(
        s.cbt(&[&["setgcpolicy", "events", "either"][..], &either].concat()),
        ""
    );
    assert_eq!(
        s.cbt(&["ls", "events"]),
        "Family Name\tGC Policy\t\t\t\tValue Type\n\
         -----------\t---------\t\t\t\t----------\n\
         both\t\t(age() > 1d && versions() > 1)\t\t{}\n\
         cf\t\tversions() > 2\t\t\t\t{}\n\
         either\t\t(age() > 1d || versions() > 2)\t\t{}\n\
         hist\t\tversions() > 3\t\t\t\t{}\n\
         old\t\tage() > 1d\t\t\t\t{}\n"
    );
}

/// Several columns and versions per `set`, at explicit times and at the server's.
fn cells(s: &mut Session) {
    let sets: [&[&str]; 5] = [
        &[
            "a1",
            "cf:c1=v1@1000",
            "cf:c1=v2@2000",
            "cf:c1=v3@3000",
            "cf:c2=w@1000",
        ],
        &[
            "b2",
            "cf:c1=x@5000",
            "old:o=gone@1000",
            "both:k=k1@1000",
            "both:k=k2@2000",
        ],
        &[
            "b2",
            "either:e=e1@1000",
            "either:e=e2@2000",
            "either:e=e3@3000",
        ],
        &["a1", "hist:h=h1@1000", "hist:h=h2@2000"],
        &["q9", "hist:h=z@7000"],
    ];
    for cells in sets {
        assert_eq!(s.cbt(&[&["set", "events"][..], cells].concat()), "");
    }
    s.now_from = now_micros();
    assert_eq!(
        s.cbt(&["set", "events", "h7", "cf:c1=y@4000", "old:o=fresh"]),
        ""
    );
    s.now_to = now_micros();
}

/// `read` with each of its filters, `lookup` and `count`.
fn reads(s: &Session) {
    assert_eq!(s.read(&[]), rows(&[A1, B2, H7, Q9]));
    assert_eq!(s.read(&["prefix=a"]), rows(&[A1]));
    assert_eq!(s.read(&["start=b", "end=q"]), rows(&[B2, H7]));
    assert_eq!(s.read(&["regex=[ah].*"]), rows(&[A1, H7]));
    assert_eq!(
        s.read(&["columns=cf:c1", "cells-per-column=1"]),
        rows(&[
            ("a1", &[("cf:c1", Micros(3000), "v3")]),
            ("b2", &[("cf:c1", Micros(5000), "x")]),
            ("h7", &[("cf:c1", Micros(4000), "y")]),
        ])
    );
    assert_eq!(s.read(&["count=2"]), rows(&[A1, B2]));
    assert_eq!(s.read(&["reversed=true", "count=2"]), rows(&[Q9, H7]));
    assert_eq!(s.cbt(&["lookup", "events", "a1"]), rows(&[A1]));
    assert_eq!(
        s.cbt(&[
            "lookup",
            "events",
            "a1",
            "columns=hist:h",
            "cells-per-column=1"
        ]),
        rows(&[("a1", &[("hist:h", Micros(2000), "h2")])])
    );
    assert_eq!(s.cbt(&["count", "events"]), "4\n");
    assert_eq!(s.cbt(&["count", "events", "prefix=h"]), "1\n");
}

/// `deleterow` and `deleteallrows`, seen by `cbt` and by the HBase shell.
fn deletes(s: &Session) {
    assert_eq!(s.cbt(&["deleterow", "events", "a1"]), "");
    assert_eq!(s.cbt(&["count", "events"]), "3\n");
    // A row that is not there: cbt prints an empty row.
    assert_eq!(s.cbt(&["lookup", "events", "a1"]), format!("{RULE}\n\n\n"));
    assert_eq!(
        s.shell("scan 'events'\n"),
        "ROW  COLUMN+CELL\n\
         \x20b2 column=both:k, timestamp=1970-01-01T00:00:00.002, value=k2\n\
         \x20b2 column=cf:c1, timestamp=1970-01-01T00:00:00.005, value=x\n\
         \x20h7 column=cf:c1, timestamp=1970-01-01T00:00:00.004, value=y\n\
         \x20h7 column=old:o, timestamp=NOW, value=fresh\n\
         \x20q9 column=hist:h, timestamp=1970-01-01T00:00:00.007, value=z\n\
         3 row(s)"
    );
    assert_eq!(s.cbt(&["deleteallrows", "events"]), "");
    assert_eq!(s.cbt(&["count", "events"]), "0\n");
    assert_eq!(s.read(&[]), "");
    assert_eq!(s.shell("count 'events'\n"), "0 row(s)");
    // The table and its families outlive their rows.
    assert_eq!(s.cbt(&["ls"]), "events\n");
}
