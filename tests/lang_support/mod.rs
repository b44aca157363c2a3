//! Helpers shared by the scene-language tests: an in-memory asset loader and short-hands.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use caustica::lang::SceneFile;
use caustica::scene::{AssetLoader, MeshData, Scene, TextureImage, VdImage};
use glam::Vec3;

/// Serves files by their file name: meshes named `*.obj`/`*.ply`/`*.ply.gz` are a unit quad,
/// `bad.obj` is malformed, textures and VD images are 2×2; names starting with `missing` fail
/// like a file that does not exist.
pub struct MemoryLoader;

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl AssetLoader for MemoryLoader {
    fn load_mesh(&self, path: &Path) -> Result<Arc<MeshData>, String> {
        let name = file_name(path);
        if name.starts_with("missing") {
            return Err("No such file or directory (os error 2)".into());
        }
        if name == "bad.obj" {
            return Err("line 3: expected 3 numbers after `v`".into());
        }
        Ok(Arc::new(MeshData {
            positions: vec![Vec3::ZERO, Vec3::X, Vec3::new(1.0, 0.0, -1.0), Vec3::NEG_Z],
            quads: vec![[0, 1, 2, 3]],
            ..MeshData::default()
        }))
    }

    fn load_texture(&self, path: &Path) -> Result<Arc<TextureImage>, String> {
        if file_name(path).starts_with("missing") {
            return Err("No such file or directory (os error 2)".into());
        }
        Ok(Arc::new(TextureImage {
            width: 2,
            height: 2,
            texels: vec![Vec3::splat(0.5); 4],
        }))
    }

    fn load_vd_image(&self, path: &Path) -> Result<Arc<VdImage>, String> {
        if file_name(path).starts_with("missing") {
            return Err("No such file or directory (os error 2)".into());
        }
        Ok(Arc::new(VdImage {
            width: 2,
            height: 2,
            texels: vec![Vec3::new(0.0, 0.0, 1.0); 4],
        }))
    }
}

/// Parses and evaluates `text` at `frame`, panicking with the rendered diagnostics on failure.
pub fn scene_at(text: &str, frame: i64) -> Scene {
    let file =
        SceneFile::from_str("scene.csc", text).unwrap_or_else(|e| panic!("parse failed:\n{e}"));
    file.eval(frame, &MemoryLoader)
        .unwrap_or_else(|e| panic!("eval failed:\n{e}"))
}

pub fn scene(text: &str) -> Scene {
    scene_at(text, 1)
}

/// The rendered diagnostics of a scene that must fail (in parsing or evaluation).
pub fn errors(text: &str) -> String {
    match SceneFile::from_str("scene.csc", text) {
        Err(e) => e.to_string(),
        Ok(file) => match file.eval(1, &MemoryLoader) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("expected errors from:\n{text}"),
        },
    }
}

pub fn close(a: Vec3, b: Vec3) -> bool {
    (a - b).length() < 1e-5
}
