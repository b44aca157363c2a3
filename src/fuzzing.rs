//! What the fuzz targets (`fuzz/`, cargo-fuzz on nightly Rust) feed Caustica, one function per
//! target, so that `tests/fuzz_corpus.rs` replays their committed corpora and the inputs that
//! once failed on stable Rust, through the same code. Each takes arbitrary bytes and must
//! return, whatever they are, without a panic, a hang or an unbounded allocation: bad input is
//! an `Err`, which the functions drop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::lang::SceneFile;
use crate::scene::{AssetLoader, EnvMap, MeshAsset, SceneAsset, TextureImage, VdImage};

/// The most faces a fuzzed scene may have for its hierarchy to be built as well: past it, the
/// build's time says nothing about the input's handling.
const MAX_PREPARED_FACES: usize = 100_000;

/// A loader that has no files: a fuzzed scene's `mesh { file }` and the like fail as missing
/// files do, so that the fuzzer explores the language, not the disk.
struct NoFiles;

impl AssetLoader for NoFiles {
    fn load_mesh(&self, _: &Path) -> Result<Arc<MeshAsset>, String> {
        Err("fuzzing reads no files".into())
    }
    fn load_texture(&self, _: &Path) -> Result<Arc<TextureImage>, String> {
        Err("fuzzing reads no files".into())
    }
    fn load_vd_image(&self, _: &Path) -> Result<Arc<VdImage>, String> {
        Err("fuzzing reads no files".into())
    }
    fn find_udim_tiles(&self, _: &Path) -> Result<Vec<(u32, std::path::PathBuf)>, String> {
        Err("fuzzing reads no files".into())
    }
    fn load_environment(&self, _: &Path) -> Result<Arc<EnvMap>, String> {
        Err("fuzzing reads no files".into())
    }
    fn load_scene_file(&self, _: &Path) -> Result<Arc<SceneAsset>, String> {
        Err("fuzzing reads no files".into())
    }
}

/// The scene language: parses `bytes` as a scene file (includes resolve against the current
/// directory, as for `SceneFile::from_str`), evaluates its first, last and a middle frame, and
/// builds the hierarchy of a small enough scene.
pub fn scene_text(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(file) = SceneFile::from_str("fuzz.csc", text) else {
        return;
    };
    let Ok(range) = file.frame_range() else {
        return;
    };
    for frame in range.sample(3) {
        let Ok(mut scene) = file.eval(frame, &NoFiles) else {
            continue;
        };
        scene.apply_quality();
        if crate::scene::limits::check(&scene).is_err() {
            continue;
        }
        let faces: usize = scene.meshes.iter().map(|m| m.data.face_count()).sum();
        if faces <= MAX_PREPARED_FACES {
            let _ = crate::prepare(&scene);
        }
    }
}

/// A mesh file (`extension`: `obj`, `ply`, `obj.gz`, `ply.gz`, `gltf` or `glb`), loaded through
/// [`crate::io::load_mesh_asset`] as a file holding `bytes`.
pub fn mesh_file(bytes: &[u8], extension: &str) {
    with_file(bytes, extension, |path| {
        let _ = crate::io::load_mesh_asset(path);
    });
}

/// A glTF file imported whole (`import "x.glb"`: meshes, camera, lights, materials).
pub fn gltf_scene(bytes: &[u8], extension: &str) {
    with_file(bytes, extension, |path| {
        let _ = crate::io::load_gltf(path);
    });
}

/// An image file, read as a texture, a VD map and a frame (`caustica compare`'s EXR).
pub fn image_file(bytes: &[u8]) {
    with_file(bytes, "exr", |path| {
        let _ = crate::io::load_texture(path);
        let _ = crate::io::load_vd_image(path);
        let _ = crate::io::read_frame(path);
    });
}

/// Distinguishes the temporary files of concurrent calls.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// Runs `read` on a temporary file holding `bytes`, named `*.<extension>` (the loaders take
/// the format from the name), and removes it.
fn with_file(bytes: &[u8], extension: &str, read: impl FnOnce(&Path)) {
    let path: PathBuf = std::env::temp_dir().join(format!(
        "caustica-fuzz-{}-{}.{extension}",
        std::process::id(),
        NEXT_FILE.fetch_add(1, Ordering::Relaxed)
    ));
    if std::fs::write(&path, bytes).is_ok() {
        read(&path);
    }
    let _ = std::fs::remove_file(&path);
}
