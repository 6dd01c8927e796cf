//! Running `basalt bench` commands, and reading the Markdown table that `basalt bench
//! bigtable` and `basalt bench gateways` print.

/// The standard output of a `basalt bench` command, which must succeed.
pub fn stdout_of(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The table's body rows, each split into its cells.
pub fn rows(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| line"))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect()
}

/// The rows' (line, clients) must be every line at each client count, in that order.
pub fn assert_lines(rows: &[Vec<&str>], lines: &[&str], clients: &[&str], text: &str) {
    let got: Vec<(&str, &str)> = rows.iter().map(|r| (r[0], r[1])).collect();
    let expected: Vec<(&str, &str)> = clients
        .iter()
        .flat_map(|c| lines.iter().map(move |w| (*w, *c)))
        .collect();
    assert_eq!(got, expected, "{text}");
}

/// Cell `i` of `row` as a number.
pub fn number(row: &[&str], i: usize) -> f64 {
    row[i]
        .parse()
        .unwrap_or_else(|e| panic!("cell {i} of {row:?}: {e}"))
}

/// A printed ratio must be what the printed rates give: they are rounded to whole
/// operations, the ratio comes from the exact rates.
pub fn assert_ratio(rate: f64, reference: f64, ratio: f64, row: &[&str]) {
    assert!(rate > 0.0 && reference > 0.0, "{row:?}");
    let low = (rate - 0.5) / (reference + 0.5) - 0.005;
    let high = (rate + 0.5) / (reference - 0.5) + 0.005;
    assert!((low..=high).contains(&ratio), "{row:?}");
}
