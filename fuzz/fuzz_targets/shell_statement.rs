#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = basalt_shell::parser::parse(&String::from_utf8_lossy(data));
});
