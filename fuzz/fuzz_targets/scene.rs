//! cargo-fuzz target `scene`: see `caustica::fuzzing` and docs/reliability.md.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    caustica::fuzzing::scene_text(data);
});
