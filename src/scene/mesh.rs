//! Mesh geometry as the renderer sees it: shared vertices, triangles and quads.

use std::path::PathBuf;
use std::sync::Arc;

use glam::{Affine3A, Vec2, Vec3};

use super::{LightKind, MaterialKind, TextureImage};

/// Indexed geometry of one mesh in object space. Attributes are per vertex; `normals` and `uvs`
/// are either empty or exactly as long as `positions`. Quads are given in order around the
/// face, `v0 v1 v2 v3`; their patch parameter is `(s, t)` with `v0` at (0,0), `v1` at (1,0),
/// `v2` at (1,1) and `v3` at (0,1).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeshData {
    pub positions: Vec<Vec3>,
    pub normals: Vec<Vec3>,
    pub uvs: Vec<Vec2>,
    pub triangles: Vec<[u32; 3]>,
    pub quads: Vec<[u32; 4]>,
}

impl MeshData {
    /// Checks the invariants above; the message says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.positions.len();
        if !self.normals.is_empty() && self.normals.len() != n {
            return Err(format!("{} normals for {} vertices", self.normals.len(), n));
        }
        if !self.uvs.is_empty() && self.uvs.len() != n {
            return Err(format!(
                "{} texture coordinates for {} vertices",
                self.uvs.len(),
                n
            ));
        }
        for (i, t) in self.triangles.iter().enumerate() {
            if let Some(&bad) = t.iter().find(|&&v| v as usize >= n) {
                return Err(format!(
                    "triangle {i} uses vertex {bad}, but there are only {n} vertices"
                ));
            }
        }
        for (i, q) in self.quads.iter().enumerate() {
            if let Some(&bad) = q.iter().find(|&&v| v as usize >= n) {
                return Err(format!(
                    "quad {i} uses vertex {bad}, but there are only {n} vertices"
                ));
            }
        }
        if let Some(p) = self.positions.iter().find(|p| !p.is_finite()) {
            return Err(format!("vertex position {p} is not finite"));
        }
        Ok(())
    }

    /// Adds a polygon given by its corner indices: a triangle, a quad, or a fan of triangles
    /// from its first corner. Returns false when the polygon has fewer than three corners and
    /// was skipped.
    pub fn push_polygon(&mut self, corners: &[u32]) -> bool {
        match *corners {
            [a, b, c] => self.triangles.push([a, b, c]),
            [a, b, c, d] => self.quads.push([a, b, c, d]),
            [first, ref rest @ ..] if rest.len() >= 4 => {
                for pair in rest.windows(2) {
                    self.triangles.push([first, pair[0], pair[1]]);
                }
            }
            _ => return false,
        }
        true
    }

    /// Number of triangles plus quads.
    pub fn face_count(&self) -> usize {
        self.triangles.len() + self.quads.len()
    }

    /// How many vertex normals are zero or not finite (none for a mesh without normals): where
    /// they make the interpolated normal unusable, the face's own normal stands in.
    pub fn unusable_normals(&self) -> usize {
        self.normals
            .iter()
            .filter(|n| !n.is_finite() || n.length_squared() == 0.0)
            .count()
    }

    /// How many faces have no area (collinear or repeated corners, or corners so far out that
    /// their area is not finite): rays never meet them. A face with a corner past the vertices
    /// counts as one (assets are counted before [`MeshData::validate`] refuses them).
    pub fn faces_without_area(&self) -> usize {
        let at = |v: u32| self.positions.get(v as usize).copied().unwrap_or(Vec3::NAN);
        let flat = |a: Vec3, b: Vec3, c: Vec3| {
            let area = (b - a).cross(c - a).length();
            !(area > 0.0 && area.is_finite())
        };
        let triangles = self
            .triangles
            .iter()
            .filter(|t| flat(at(t[0]), at(t[1]), at(t[2])))
            .count();
        let quads = self
            .quads
            .iter()
            .filter(|q| {
                let [a, b, c, d] = q.map(at);
                flat(a, b, c) && flat(a, c, d)
            })
            .count();
        triangles + quads
    }

    /// Object-space bounds `(min, max)`; `None` for a mesh without vertices.
    pub fn bounds(&self) -> Option<(Vec3, Vec3)> {
        let first = *self.positions.first()?;
        Some(
            self.positions
                .iter()
                .fold((first, first), |(lo, hi), &p| (lo.min(p), hi.max(p))),
        )
    }

    /// The four corner positions of quad `i`.
    pub fn quad_corners(&self, i: usize) -> [Vec3; 4] {
        self.quads[i].map(|v| self.positions[v as usize])
    }

    /// The four corner UVs of quad `i`; the unit square's corners when the mesh has no UVs.
    pub fn quad_uvs(&self, i: usize) -> [Vec2; 4] {
        if self.uvs.is_empty() {
            [
                Vec2::new(0.0, 0.0),
                Vec2::new(1.0, 0.0),
                Vec2::new(1.0, 1.0),
                Vec2::new(0.0, 1.0),
            ]
        } else {
            self.quads[i].map(|v| self.uvs[v as usize])
        }
    }
}

/// A mesh file as loaded: its faces split into parts by the material the file gives them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeshAsset {
    /// One part per material, in the order the file first uses them. A file without materials
    /// (every PLY file, and an OBJ file without `usemtl`) has a single part with none.
    pub parts: Vec<MeshPart>,
    /// The materials the parts name, translated from the file's MTL libraries.
    pub materials: Vec<FileMaterial>,
    /// What the file says that the loader could not use, each as `file:line:col: message`.
    pub warnings: Vec<String>,
    /// Its faces and normals counted once, when it was built ([`FaceCounts::of`]), so that
    /// the frames that use it do not count them again.
    pub counts: FaceCounts,
}

/// How many of a mesh's faces and vertex normals can render, over all its parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaceCounts {
    /// Triangles plus quads.
    pub faces: usize,
    /// Faces without an area ([`MeshData::faces_without_area`]).
    pub without_area: usize,
    pub normals: usize,
    /// Vertex normals that are zero or not finite ([`MeshData::unusable_normals`]).
    pub unusable_normals: usize,
}

impl FaceCounts {
    pub fn of(parts: &[MeshPart]) -> FaceCounts {
        let mut counts = FaceCounts::default();
        for part in parts {
            let d = &part.data;
            counts.faces += d.face_count();
            counts.without_area += d.faces_without_area();
            counts.normals += d.normals.len();
            counts.unusable_normals += d.unusable_normals();
        }
        counts
    }

    /// Whether no face has an area: nothing of the mesh can render unless displaced.
    pub fn nothing_renders(&self) -> bool {
        self.without_area == self.faces
    }
}

/// The faces of a mesh file that share one material.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshPart {
    /// Index into [`MeshAsset::materials`]; `None` for faces the file gives no known material.
    pub material: Option<usize>,
    pub data: Arc<MeshData>,
}

/// A material defined by a mesh file (an MTL `newmtl`), already translated to a Caustica material.
#[derive(Clone, Debug, PartialEq)]
pub struct FileMaterial {
    pub name: String,
    /// The material; a diffuse albedo texture is not resolved yet (`texture: None`) and is named
    /// by `texture_file` instead.
    pub kind: MaterialKind,
    /// The diffuse colour map (`map_Kd`), resolved against the MTL file's folder; for an image
    /// held inside the file (glTF), a name for it (`scene.glb#image3`).
    pub texture_file: Option<PathBuf>,
    /// The colour map's texels when the file holds them (a glTF image in a buffer or a data
    /// URI), decoded already; `None` when `texture_file` is to be loaded.
    pub texture_image: Option<Arc<TextureImage>>,
    /// The map's UV scale and offset (`map_Kd -s u v -o u v`).
    pub texture_scale: glam::Vec2,
    pub texture_offset: glam::Vec2,
}

impl MeshAsset {
    /// An asset of these parts, its faces counted.
    pub fn new(
        parts: Vec<MeshPart>,
        materials: Vec<FileMaterial>,
        warnings: Vec<String>,
    ) -> MeshAsset {
        MeshAsset {
            counts: FaceCounts::of(&parts),
            parts,
            materials,
            warnings,
        }
    }

    /// A single part without a material holding `data`.
    pub fn single(data: MeshData) -> MeshAsset {
        let part = MeshPart {
            material: None,
            data: Arc::new(data),
        };
        MeshAsset::new(vec![part], Vec::new(), Vec::new())
    }

    /// Every part's faces in one mesh, the parts one after another, for callers that want the
    /// geometry alone.
    pub fn merged(&self) -> MeshData {
        if let [only] = self.parts.as_slice() {
            return (*only.data).clone();
        }
        let mut out = MeshData::default();
        let keep_normals = self.parts.iter().all(|p| !p.data.normals.is_empty());
        let keep_uvs = self.parts.iter().all(|p| !p.data.uvs.is_empty());
        for part in &self.parts {
            let d = &part.data;
            let base = out.positions.len() as u32;
            out.positions.extend_from_slice(&d.positions);
            if keep_normals {
                out.normals.extend_from_slice(&d.normals);
            }
            if keep_uvs {
                out.uvs.extend_from_slice(&d.uvs);
            }
            out.triangles
                .extend(d.triangles.iter().map(|t| t.map(|v| v + base)));
            out.quads
                .extend(d.quads.iter().map(|q| q.map(|v| v + base)));
        }
        out
    }
}

/// A scene file (glTF) as loaded: its meshes, where its nodes place them, its first camera and
/// its lights, in Caustica's terms.
#[derive(Clone, Debug, Default)]
pub struct SceneAsset {
    /// One per mesh of the file, split into parts by material; every mesh carries all of the
    /// file's materials, so that a part's index means the same material in each.
    pub meshes: Vec<Arc<MeshAsset>>,
    /// The file's names of its meshes, for the scene meshes made from them.
    pub mesh_names: Vec<String>,
    /// Every node of the default scene that holds a mesh: the mesh and the node's world
    /// transform.
    pub placements: Vec<Placement>,
    /// The first camera of the scene's nodes.
    pub camera: Option<FileCamera>,
    /// The punctual lights of the scene's nodes, in world space.
    pub lights: Vec<LightKind>,
    /// What the file says that the loader could not use.
    pub warnings: Vec<String>,
}

/// A mesh placed by a node of a scene file.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub mesh: usize,
    pub transform: Affine3A,
}

/// A perspective camera of a scene file, in world space.
#[derive(Clone, Debug, PartialEq)]
pub struct FileCamera {
    pub position: Vec3,
    pub look_at: Vec3,
    pub up: Vec3,
    /// Vertical field of view in degrees.
    pub fov_deg: f32,
}

impl SceneAsset {
    /// Every placed mesh in world space, as one mesh file split by material (`mesh NAME { file
    /// "scene.gltf" }`). A mirroring transform reverses its faces' winding, so that the front
    /// sides stay where the file put them.
    pub fn flattened(&self) -> MeshAsset {
        let materials = self
            .meshes
            .first()
            .map(|m| m.materials.clone())
            .unwrap_or_default();
        let mut parts: Vec<(Option<usize>, MeshData, bool, bool)> = Vec::new();
        for placement in &self.placements {
            let Some(mesh) = self.meshes.get(placement.mesh) else {
                continue;
            };
            let t = placement.transform;
            let normal_matrix = t.matrix3.inverse().transpose();
            let flip = t.matrix3.determinant() < 0.0;
            for part in &mesh.parts {
                let k = match parts.iter().position(|p| p.0 == part.material) {
                    Some(k) => k,
                    None => {
                        parts.push((part.material, MeshData::default(), true, true));
                        parts.len() - 1
                    }
                };
                let (_, out, normals, uvs) = &mut parts[k];
                let d = &part.data;
                *normals &= !d.normals.is_empty();
                *uvs &= !d.uvs.is_empty();
                let base = out.positions.len() as u32;
                out.positions
                    .extend(d.positions.iter().map(|p| t.transform_point3(*p)));
                out.normals.extend(
                    d.normals
                        .iter()
                        .map(|n| (normal_matrix * *n).normalize_or_zero()),
                );
                out.uvs.extend_from_slice(&d.uvs);
                out.triangles.extend(d.triangles.iter().map(|tri| {
                    let [a, b, c] = tri.map(|v| v + base);
                    if flip {
                        [a, c, b]
                    } else {
                        [a, b, c]
                    }
                }));
                out.quads.extend(d.quads.iter().map(|q| {
                    let [a, b, c, e] = q.map(|v| v + base);
                    if flip {
                        [a, e, c, b]
                    } else {
                        [a, b, c, e]
                    }
                }));
            }
        }
        let parts = parts
            .into_iter()
            .map(|(material, mut data, normals, uvs)| {
                // Attributes only some placed parts had are dropped for the whole part.
                if !normals {
                    data.normals.clear();
                }
                if !uvs {
                    data.uvs.clear();
                }
                MeshPart {
                    material,
                    data: Arc::new(data),
                }
            })
            .collect();
        MeshAsset::new(parts, materials, self.warnings.clone())
    }
}
