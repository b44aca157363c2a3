//! glTF 2.0 in (`.gltf` with its buffers and images, or `.glb`), through the `gltf` crate: the
//! default scene's meshes where its nodes place them, its materials, first camera and punctual
//! lights, as a [`SceneAsset`].
//!
//! Materials (metallic-roughness) map onto Caustica's:
//! - an emissive factor (times `KHR_materials_emissive_strength`) → emissive;
//! - `KHR_materials_transmission` → dielectric of `KHR_materials_ior` (1.5 by default), tinted
//!   by the base colour;
//! - metallic 0.5 or more → a conductor of the material's roughness reflecting the base colour
//!   head-on and white at grazing incidence (Gulbrandsen's mapping), tinted by the base-colour
//!   texture;
//! - `KHR_materials_specular` 0 or an index of 1 → diffuse of the base colour times its texture;
//! - anything else → a plastic of the base colour times its texture under a coat of the file's
//!   index and the material's roughness.
//!
//! Textures go through `KHR_texture_transform`'s offset and scale. What is not modelled
//! (metallic-roughness textures, partial specular factors, emissive textures) is reported once
//! per file. Lights are photometric in glTF (candela, lux) and divided by 683 lm/W.
//! Texture coordinates are flipped to Caustica's convention (v up). Accessors are checked to
//! lie inside their buffers before they are read; sparse accessors and primitives other than
//! triangles are reported and left out.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use glam::{Affine3A, Mat4, Vec2, Vec3};

use super::texture::srgb_to_linear;
use super::IoError;
use crate::scene::{
    conductor_from_reflectance, FileCamera, FileMaterial, LightKind, MaterialKind, MeshAsset,
    MeshData, MeshPart, Placement, SceneAsset, TextureImage,
};

/// Lumens per watt: glTF's photometric light units to Caustica's radiometric ones.
const LUMENS_PER_WATT: f32 = 683.0;

/// Loads a `.gltf` or `.glb` file.
pub fn load_gltf(path: &Path) -> Result<SceneAsset, IoError> {
    let format = |message: String| IoError::format(path, message);
    check_glb_header(path)?;
    let gltf = gltf::Gltf::open(path).map_err(|e| match e {
        gltf::Error::Io(source) => IoError::read(path, source),
        other => format(other.to_string()),
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let buffers = gltf::import_buffers(&gltf.document, Some(base), gltf.blob.clone())
        .map_err(|e| format(format!("its buffers: {e}")))?;
    let mut reader = Reader {
        path,
        document: &gltf.document,
        buffers: &buffers,
        warnings: Warnings::default(),
        images: HashMap::new(),
    };
    let materials = reader.materials()?;
    let mut meshes = Vec::new();
    let mut mesh_names = Vec::new();
    for mesh in gltf.document.meshes() {
        meshes.push(Arc::new(reader.mesh(&mesh, &materials)?));
        mesh_names.push(
            mesh.name()
                .map_or_else(|| format!("mesh{}", mesh.index()), str::to_string),
        );
    }
    let mut asset = SceneAsset {
        meshes,
        mesh_names,
        ..SceneAsset::default()
    };
    let scene = gltf
        .document
        .default_scene()
        .or_else(|| gltf.document.scenes().next());
    if let Some(scene) = scene {
        for node in scene.nodes() {
            reader.node(&node, Affine3A::IDENTITY, &mut asset, 0)?;
        }
    }
    asset.warnings = reader.warnings.finish(path);
    for warning in &asset.warnings {
        log::warn!("{warning}");
    }
    Ok(asset)
}

/// A binary glTF's header (`glTF`, version, length) must give a length from the header's 12
/// bytes to the file's size: the `gltf` crate subtracts 12 from it unchecked and allocates the
/// result (a length under 12 asks for 4 GiB).
fn check_glb_header(path: &Path) -> Result<(), IoError> {
    let mut header = [0u8; 12];
    let filled = super::texture::read_head(path, &mut header)?;
    if filled < 4 || &header[..4] != b"glTF" {
        return Ok(()); // JSON glTF, or not glTF at all: the crate says which.
    }
    let size = std::fs::metadata(path)
        .map_err(|e| IoError::read(path, e))?
        .len();
    let length = u32::from_le_bytes([header[8], header[9], header[10], header[11]]) as u64;
    if filled < 12 || length < 12 || length > size {
        return Err(IoError::format(
            path,
            format!("GLB: the header gives a length of {length} bytes for a file of {size}"),
        ));
    }
    Ok(())
}

/// Loads a `.gltf` or `.glb` file's placed meshes as one mesh file split by material.
pub fn load_gltf_mesh(path: &Path) -> Result<MeshAsset, IoError> {
    let asset = load_gltf(path)?;
    if asset.placements.is_empty() {
        return Err(IoError::format(path, "its scene places no mesh"));
    }
    Ok(asset.flattened())
}

/// Deeper node hierarchies are refused rather than followed (a file may be cyclic).
const MAX_NODE_DEPTH: u32 = 256;

/// Warnings counted by kind, each reported once with how often it happened.
#[derive(Default)]
struct Warnings {
    counts: Vec<(String, usize)>,
}

impl Warnings {
    fn add(&mut self, message: impl Into<String>) {
        let message = message.into();
        match self.counts.iter_mut().find(|(m, _)| *m == message) {
            Some((_, n)) => *n += 1,
            None => self.counts.push((message, 1)),
        }
    }

    fn finish(self, path: &Path) -> Vec<String> {
        self.counts
            .into_iter()
            .map(|(message, n)| {
                let times = if n > 1 {
                    format!(" ({n} times)")
                } else {
                    String::new()
                };
                format!("{}: {message}{times}", path.display())
            })
            .collect()
    }
}

struct Reader<'a> {
    path: &'a Path,
    document: &'a gltf::Document,
    buffers: &'a [gltf::buffer::Data],
    warnings: Warnings,
    /// Decoded images by index.
    images: HashMap<usize, Arc<TextureImage>>,
}

impl Reader<'_> {
    fn error(&self, message: String) -> IoError {
        IoError::format(self.path, message)
    }

    fn materials(&mut self) -> Result<Vec<FileMaterial>, IoError> {
        let document = self.document;
        let mut out = Vec::new();
        for m in document.materials() {
            let name = m
                .name()
                .map_or_else(|| format!("material{}", out.len()), str::to_string);
            out.push(self.material(&m, name)?);
        }
        Ok(out)
    }

    fn material(&mut self, m: &gltf::Material, name: String) -> Result<FileMaterial, IoError> {
        let pbr = m.pbr_metallic_roughness();
        let [r, g, b, alpha] = pbr.base_color_factor();
        let base = Vec3::new(r, g, b);
        let roughness = pbr.roughness_factor();
        let emissive = Vec3::from_array(m.emissive_factor()) * m.emissive_strength().unwrap_or(1.0);
        let mut material = FileMaterial {
            name,
            kind: MaterialKind::Diffuse {
                albedo: base,
                texture: None,
            },
            texture_file: None,
            texture_image: None,
            texture_scale: Vec2::ONE,
            texture_offset: Vec2::ZERO,
        };
        if alpha < 1.0 || m.alpha_mode() != gltf::material::AlphaMode::Opaque {
            self.warnings
                .add("transparency (alpha) is not modelled: surfaces are opaque");
        }
        if emissive.max_element() > 0.0 {
            if m.emissive_texture().is_some() {
                self.warnings
                    .add("emissive textures are not modelled: the emissive factor is used");
            }
            material.kind = MaterialKind::Emissive {
                radiance: emissive,
                samples: 1,
            };
            return Ok(material);
        }
        if let Some(t) = m.transmission().filter(|t| t.transmission_factor() > 0.0) {
            if t.transmission_factor() < 1.0 {
                self.warnings
                    .add("partial transmission is taken as a clear dielectric");
            }
            material.kind = MaterialKind::Dielectric {
                ior: m.ior().unwrap_or(1.5),
                tint: base,
                fresnel: crate::scene::FresnelMode::Exact,
                roughness: roughness.clamp(0.0, 1.0),
            };
            return Ok(material);
        }
        if pbr.metallic_roughness_texture().is_some() {
            self.warnings
                .add("metallic-roughness textures are not modelled: their factors are used");
        }
        if pbr.metallic_factor() >= 0.5 {
            // A conductor reflecting the base colour at normal incidence, white at grazing
            // incidence as glTF's Schlick term is; a base-colour texture tints it (so a texel
            // t reflects the factor times t head-on, and t at grazing incidence).
            let (eta, k) = conductor_from_reflectance(base);
            material.kind = MaterialKind::Conductor {
                eta,
                k,
                tint: Vec3::ONE,
                roughness: roughness.clamp(0.0, 1.0),
                texture: None,
            };
        } else {
            // A non-metal is a diffuse base under a dielectric coat of the file's index (1.5),
            // a plastic, unless KHR_materials_specular turns its specular layer off (or the
            // index is 1, which reflects nothing): then it is diffuse.
            let ior = m.ior().unwrap_or(1.5);
            let specular = m.specular().map_or(1.0, |s| s.specular_factor());
            if specular > 0.0 && specular < 1.0 {
                self.warnings
                    .add("a specular factor between 0 and 1 is taken as 1");
            }
            if specular > 0.0 && ior > 1.0 {
                material.kind = MaterialKind::plastic(base, None, ior, roughness.clamp(0.0, 1.0));
            }
        }
        if let Some(info) = pbr.base_color_texture() {
            if info.tex_coord() != 0 {
                self.warnings
                    .add("textures on a second texture coordinate set are read from the first");
            }
            let image = info.texture().source();
            let index = image.index();
            material.texture_image = Some(self.image(image)?);
            material.texture_file = Some(self.path.with_file_name(format!(
                "{}#image{index}",
                self.path.file_name().unwrap_or_default().to_string_lossy()
            )));
            if let Some(t) = info.texture_transform() {
                if t.rotation() != 0.0 {
                    self.warnings
                        .add("texture transform rotations are not modelled");
                }
                // glTF's v runs down the image, Caustica's up: v' = s·v + o in glTF's terms is
                // s·v_c + (1 − s − o) in Caustica's.
                let [su, sv] = t.scale();
                let [ou, ov] = t.offset();
                material.texture_scale = Vec2::new(su, sv);
                material.texture_offset = Vec2::new(ou, 1.0 - sv - ov);
            }
        }
        Ok(material)
    }

    /// Image `image`, decoded once to linear RGB (8- and 16-bit images from sRGB).
    fn image(&mut self, image: gltf::Image) -> Result<Arc<TextureImage>, IoError> {
        let index = image.index();
        if let Some(done) = self.images.get(&index) {
            return Ok(Arc::clone(done));
        }
        let base = self.path.parent().unwrap_or(Path::new("."));
        if let gltf::image::Source::View { view, .. } = image.source() {
            if !view_fits(&view, self.buffers) {
                return Err(self.error(format!("image {index} lies outside its buffer")));
            }
        }
        let data = gltf::image::Data::from_source(image.source(), Some(base), self.buffers)
            .map_err(|e| self.error(format!("image {index}: {e}")))?;
        let decoded = Arc::new(linear_image(&data));
        self.images.insert(index, Arc::clone(&decoded));
        Ok(decoded)
    }

    fn mesh(
        &mut self,
        mesh: &gltf::Mesh,
        materials: &[FileMaterial],
    ) -> Result<MeshAsset, IoError> {
        // The primitives of each material, in the order the materials first appear.
        let mut by_material: Vec<MeshAsset> = Vec::new();
        for primitive in mesh.primitives() {
            if primitive.mode() != gltf::mesh::Mode::Triangles {
                self.warnings.add(
                    "primitives other than triangles (points, lines, strips, fans) are left out",
                );
                continue;
            }
            let accessors = primitive
                .attributes()
                .map(|(_, a)| a)
                .chain(primitive.indices());
            for accessor in accessors {
                if accessor.sparse().is_some() {
                    return Err(self.error(format!(
                        "mesh {}: sparse accessor {} is not supported",
                        mesh.index(),
                        accessor.index()
                    )));
                }
                if !accessor_fits(&accessor, self.buffers) {
                    return Err(self.error(format!(
                        "mesh {}: accessor {} lies outside its buffer",
                        mesh.index(),
                        accessor.index()
                    )));
                }
            }
            let buffers = self.buffers;
            let read = primitive.reader(|b| buffers.get(b.index()).map(|d| &d.0[..]));
            let Some(positions) = read.read_positions() else {
                self.warnings
                    .add("primitives without positions are left out");
                continue;
            };
            let mut data = MeshData {
                positions: positions.map(Vec3::from_array).collect(),
                ..MeshData::default()
            };
            let n = data.positions.len();
            if let Some(normals) = read.read_normals() {
                data.normals = normals.map(Vec3::from_array).collect();
            }
            if let Some(uvs) = read.read_tex_coords(0) {
                data.uvs = uvs.into_f32().map(|[u, v]| Vec2::new(u, 1.0 - v)).collect();
            }
            let indices: Vec<u32> = match read.read_indices() {
                Some(i) => i.into_u32().collect(),
                None => (0..n as u32).collect(),
            };
            data.triangles = indices
                .chunks_exact(3)
                .map(|c| [c[0], c[1], c[2]])
                .collect();
            data.validate().map_err(|message| {
                self.error(format!(
                    "mesh {} primitive {}: {message}",
                    mesh.index(),
                    primitive.index()
                ))
            })?;
            let material = primitive.material().index();
            let part = MeshPart {
                material,
                data: Arc::new(data),
            };
            match by_material
                .iter_mut()
                .find(|group| group.parts[0].material == material)
            {
                Some(group) => group.parts.push(part),
                None => by_material.push(MeshAsset {
                    parts: vec![part],
                    ..MeshAsset::default()
                }),
            }
        }
        // One part per material: its primitives' faces one after another.
        let parts = by_material
            .iter()
            .map(|group| MeshPart {
                material: group.parts[0].material,
                data: Arc::new(group.merged()),
            })
            .collect();
        Ok(MeshAsset::new(parts, materials.to_vec(), Vec::new()))
    }

    fn node(
        &mut self,
        node: &gltf::Node,
        parent: Affine3A,
        asset: &mut SceneAsset,
        depth: u32,
    ) -> Result<(), IoError> {
        if depth > MAX_NODE_DEPTH {
            return Err(self.error(format!(
                "its node hierarchy is deeper than {MAX_NODE_DEPTH} (or cyclic)"
            )));
        }
        let local = Mat4::from_cols_array_2d(&node.transform().matrix());
        let world = parent * Affine3A::from_mat4(local);
        if !world.is_finite() {
            return Err(self.error(format!(
                "node {} has a transform that is not finite",
                node.index()
            )));
        }
        if let Some(mesh) = node.mesh() {
            if node.skin().is_some() || mesh.weights().is_some() {
                self.warnings.add(
                    "skins and morph targets are not modelled: meshes stay in their rest pose",
                );
            }
            asset.placements.push(Placement {
                mesh: mesh.index(),
                transform: world,
            });
        }
        if let (Some(camera), None) = (node.camera(), &asset.camera) {
            match camera.projection() {
                gltf::camera::Projection::Perspective(p) => {
                    // A glTF camera looks down its local −Z with +Y up.
                    let position = world.transform_point3(Vec3::ZERO);
                    let forward = world.transform_vector3(Vec3::NEG_Z).normalize_or_zero();
                    let up = world.transform_vector3(Vec3::Y).normalize_or_zero();
                    asset.camera = Some(FileCamera {
                        position,
                        look_at: position + forward,
                        up,
                        fov_deg: p.yfov().to_degrees(),
                    });
                }
                gltf::camera::Projection::Orthographic(_) => {
                    self.warnings.add("orthographic cameras are not supported");
                }
            }
        }
        if let Some(light) = node.light() {
            asset.lights.push(light_kind(&light, &world));
        }
        for child in node.children() {
            self.node(&child, world, asset, depth + 1)?;
        }
        Ok(())
    }
}

/// A `KHR_lights_punctual` light placed by `world`, in watts (photometric units over 683 lm/W).
fn light_kind(light: &gltf::khr_lights_punctual::Light, world: &Affine3A) -> LightKind {
    use gltf::khr_lights_punctual::Kind;
    let color = Vec3::from_array(light.color()) * (light.intensity() / LUMENS_PER_WATT);
    let position = world.transform_point3(Vec3::ZERO);
    let direction = world.transform_vector3(Vec3::NEG_Z).normalize_or_zero();
    let four_pi = 4.0 * std::f32::consts::PI;
    match light.kind() {
        // Lux → W/m².
        Kind::Directional => LightKind::Directional {
            direction,
            irradiance: color,
            angle_deg: 0.0,
        },
        // Candela → W/sr, and Caustica's power is that of the isotropic light of that intensity.
        Kind::Point => LightKind::Point {
            position,
            power: color * four_pi,
        },
        Kind::Spot {
            inner_cone_angle,
            outer_cone_angle,
        } => LightKind::Spot {
            position,
            direction,
            power: color * four_pi,
            cone_inner_deg: inner_cone_angle.to_degrees(),
            cone_outer_deg: outer_cone_angle.to_degrees(),
        },
    }
}

/// Whether buffer view `view` lies inside its buffer's data.
fn view_fits(view: &gltf::buffer::View, buffers: &[gltf::buffer::Data]) -> bool {
    let Some(data) = buffers.get(view.buffer().index()) else {
        return false;
    };
    view.offset()
        .checked_add(view.length())
        .is_some_and(|end| end <= data.0.len())
}

/// Whether every element of `accessor` lies inside its buffer view and the view inside its
/// buffer, so that reading it cannot run past the data.
fn accessor_fits(accessor: &gltf::Accessor, buffers: &[gltf::buffer::Data]) -> bool {
    let Some(view) = accessor.view() else {
        // No view: zeros, which the crate makes itself.
        return true;
    };
    if !view_fits(&view, buffers) {
        return false;
    }
    let size = accessor.size();
    let stride = view.stride().unwrap_or(size).max(size);
    let count = accessor.count();
    if count == 0 {
        return true;
    }
    (count - 1)
        .checked_mul(stride)
        .and_then(|s| s.checked_add(size))
        .and_then(|s| s.checked_add(accessor.offset()))
        .is_some_and(|end| end <= view.length())
}

/// A decoded glTF image as linear RGB (8- and 16-bit channels from sRGB; float as stored).
fn linear_image(data: &gltf::image::Data) -> TextureImage {
    use gltf::image::Format;
    let (channels, bytes) = match data.format {
        Format::R8 => (1, 1),
        Format::R8G8 => (2, 1),
        Format::R8G8B8 => (3, 1),
        Format::R8G8B8A8 => (4, 1),
        Format::R16 => (1, 2),
        Format::R16G16 => (2, 2),
        Format::R16G16B16 => (3, 2),
        Format::R16G16B16A16 => (4, 2),
        Format::R32G32B32FLOAT => (3, 4),
        Format::R32G32B32A32FLOAT => (4, 4),
    };
    let texel_bytes = channels * bytes;
    let channel = |texel: &[u8], c: usize| -> f32 {
        let c = c.min(channels - 1).min(2);
        let at = &texel[c * bytes..(c + 1) * bytes];
        match bytes {
            1 => srgb_to_linear(at[0] as f32 / 255.0),
            2 => srgb_to_linear(u16::from_ne_bytes([at[0], at[1]]) as f32 / 65535.0),
            _ => f32::from_ne_bytes([at[0], at[1], at[2], at[3]]),
        }
    };
    let texels = data
        .pixels
        .chunks_exact(texel_bytes)
        .map(|t| {
            // Grey and grey-alpha images repeat their first channel.
            if channels <= 2 {
                Vec3::splat(channel(t, 0))
            } else {
                Vec3::new(channel(t, 0), channel(t, 1), channel(t, 2))
            }
        })
        .collect();
    TextureImage {
        width: data.width,
        height: data.height,
        texels,
    }
}
