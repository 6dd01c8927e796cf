#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = basalt_storage::fuzzing::index_block(data);
});
