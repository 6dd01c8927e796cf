//! Replays the committed corpus of the `shell_statement` fuzz target
//! (`fuzz/corpus/shell_statement/`) through the shell's parser on stable Rust: nothing
//! panics or overflows the stack (on a thread with a 1 MiB stack, half of what a process's
//! main thread has), and the `valid-*` seeds still parse.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

#[test]
fn the_statement_corpus_parses_or_fails_cleanly() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/shell_statement");
    let inputs: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (
                name,
                String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned(),
            )
        })
        .collect();
    assert!(inputs.len() >= 10, "{} inputs", inputs.len());
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            for (name, text) in inputs {
                let parsed = basalt_shell::parser::parse(&text);
                if name.starts_with("valid-") {
                    assert!(parsed.is_ok(), "{name}: {parsed:?}");
                }
                // Filter strings in the statements go through the filter language too.
                if let Some(f) = text.split("FILTER => \"").nth(1) {
                    let f = f.split('"').next().unwrap_or_default();
                    let _ = basalt_model::filter::parse_filter(f);
                }
            }
        })
        .unwrap()
        .join()
        .unwrap();
}
