//! Helpers of the binary's end-to-end tests.

/// A process's output with the shell's `Took N seconds` timings masked.
pub fn masked(out: &[u8]) -> String {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| {
            if l.starts_with("Took ") {
                "Took X seconds"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
