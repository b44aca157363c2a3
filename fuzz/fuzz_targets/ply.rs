//! cargo-fuzz target `ply`: see `caustica::fuzzing` and docs/reliability.md.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    caustica::fuzzing::mesh_file(data, "ply");
});
