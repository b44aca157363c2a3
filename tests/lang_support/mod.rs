//! Helpers shared by the scene-language tests: an in-memory asset loader and short-hands.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use caustica::lang::SceneFile;
use caustica::scene::{
    AssetLoader, EnvMap, FileMaterial, MaterialKind, MeshAsset, MeshData, MeshPart, Scene,
    SceneAsset, TextureImage, VdImage,
};
use glam::Vec3;

/// Serves files by their file name: meshes named `*.obj`/`*.ply`/`*.ply.gz` are a unit quad,
/// `bad.obj` is malformed, textures and VD images are 2×2, a UDIM pattern has tiles 1001 and
/// 1012 (none when its name starts with `missing`), environment maps 4×2 of radiance 1; names
/// starting with `missing` fail
/// like a file that does not exist. Three OBJ files carry materials of their own:
/// `parts.obj` has a quad of the textured diffuse material `red` (texture `wood.png`) and a quad
/// of the emissive `lamp`; `partial.obj` has a `red` quad and a quad without a material;
/// `badtexture.obj` has one quad whose material's texture is `missing.png`.
pub struct MemoryLoader;

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl AssetLoader for MemoryLoader {
    fn load_mesh(&self, path: &Path) -> Result<Arc<MeshAsset>, String> {
        let name = file_name(path);
        if name.starts_with("missing") {
            return Err("No such file or directory (os error 2)".into());
        }
        if name == "bad.obj" {
            return Err("line 3: expected 3 numbers after `v`".into());
        }
        let quad = || {
            Arc::new(MeshData {
                positions: vec![Vec3::ZERO, Vec3::X, Vec3::new(1.0, 0.0, -1.0), Vec3::NEG_Z],
                quads: vec![[0, 1, 2, 3]],
                ..MeshData::default()
            })
        };
        let folder = path.parent().unwrap_or(Path::new(""));
        let red = |texture: &str| FileMaterial {
            name: "red".into(),
            kind: MaterialKind::Diffuse {
                albedo: Vec3::new(0.8, 0.1, 0.1),
                texture: None,
            },
            texture_file: Some(folder.join(texture)),
            texture_scale: glam::Vec2::ONE,
            texture_offset: glam::Vec2::ZERO,
            texture_image: None,
        };
        let part = |material| MeshPart {
            material,
            data: quad(),
        };
        let asset = match name.as_str() {
            "parts.obj" => MeshAsset::new(
                vec![part(Some(0)), part(Some(1))],
                vec![
                    red("wood.png"),
                    FileMaterial {
                        name: "lamp".into(),
                        kind: MaterialKind::Emissive {
                            radiance: Vec3::new(17.0, 12.0, 4.0),
                            samples: 1,
                        },
                        texture_file: None,
                        texture_scale: glam::Vec2::ONE,
                        texture_offset: glam::Vec2::ZERO,
                        texture_image: None,
                    },
                ],
                Vec::new(),
            ),
            "partial.obj" => MeshAsset::new(
                vec![part(Some(0)), part(None)],
                vec![red("wood.png")],
                Vec::new(),
            ),
            "badtexture.obj" => {
                MeshAsset::new(vec![part(Some(0))], vec![red("missing.png")], Vec::new())
            }
            _ => MeshAsset::new(vec![part(None)], Vec::new(), Vec::new()),
        };
        Ok(Arc::new(asset))
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

    fn find_udim_tiles(&self, pattern: &Path) -> Result<Vec<(u32, std::path::PathBuf)>, String> {
        let name = file_name(pattern);
        if name.starts_with("missing") {
            return Ok(Vec::new());
        }
        let tile = |n: u32, text: &str| {
            let file = name.replace("<UDIM>", text).replace("<UVTILE>", text);
            (n, pattern.with_file_name(file))
        };
        Ok(vec![tile(1001, "1001"), tile(1012, "1012")])
    }

    fn load_environment(&self, path: &Path) -> Result<Arc<EnvMap>, String> {
        if file_name(path).starts_with("missing") {
            return Err("No such file or directory (os error 2)".into());
        }
        Ok(Arc::new(EnvMap::new(&TextureImage {
            width: 4,
            height: 2,
            texels: vec![Vec3::ONE; 8],
        })))
    }

    fn load_scene_file(&self, path: &Path) -> Result<Arc<SceneAsset>, String> {
        Err(format!(
            "the in-memory loader holds no scene files ({})",
            file_name(path)
        ))
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
