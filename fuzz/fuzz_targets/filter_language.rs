#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    basalt_storage::fuzzing::filter_language(data);
});
