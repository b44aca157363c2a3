//! The fuzz targets' committed inputs (`fuzz/seeds/<target>/`, and `fuzz/regressions/<target>/`
//! for inputs that once failed) replayed on stable Rust through the functions the targets call
//! (`caustica::fuzzing`): each must come back, whatever its bytes. docs/reliability.md has the
//! fuzzing runs themselves.

use std::path::{Path, PathBuf};

fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// Every target's seeds and regressions, through the target's own function; each seed folder
/// holds at least one input.
#[test]
fn the_fuzz_targets_committed_inputs_all_come_back_without_a_panic() {
    type Target = (&'static str, fn(&[u8]));
    let targets: [Target; 5] = [
        ("scene", caustica::fuzzing::scene_text),
        ("obj", |b| caustica::fuzzing::mesh_file(b, "obj")),
        ("ply", |b| caustica::fuzzing::mesh_file(b, "ply")),
        ("gltf", |b| caustica::fuzzing::gltf_scene(b, "glb")),
        ("exr", caustica::fuzzing::image_file),
    ];
    for (target, run) in targets {
        let seeds = inputs("seeds", target);
        assert!(!seeds.is_empty(), "no seeds for the {target} target");
        for path in seeds.iter().chain(&inputs("regressions", target)) {
            let bytes = std::fs::read(path).unwrap();
            run(&bytes);
        }
    }
}
