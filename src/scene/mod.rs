//! The scene IR: what a scene *is* for one frame, without syntax and without GPU.
//!
//! `lang::eval` produces a [`Scene`] for one frame; `accel` builds the hierarchy from it and the
//! backends render it. Every user-visible entity keeps the [`Span`] of the text that declared it,
//! so later stages can still point at `file:line:col` when they reject something.

pub mod devices;
pub mod environment;
pub mod fresnel;
pub mod limits;
pub mod mesh;
pub mod shapes;
pub mod span;
pub mod sphere_light;
pub mod vdmap;

use std::path::PathBuf;
use std::sync::Arc;

use glam::{Affine3A, Vec2, Vec3};

pub use devices::{DeviceChoice, DeviceList};
pub use environment::{EnvMap, EnvSample, Environment};
pub use mesh::{
    FaceCounts, FileCamera, FileMaterial, MeshAsset, MeshData, MeshPart, Placement, SceneAsset,
};
pub use span::Span;
pub use sphere_light::{SphereCone, SphereLight};
pub use vdmap::{VdImage, VdLayout, VdMap, VdSpace};

/// Index into [`Scene::materials`].
pub type MaterialId = u32;
/// Index into [`Scene::meshes`].
pub type MeshId = u32;
/// Index into [`Scene::textures`].
pub type TextureId = u32;
/// Index into [`Scene::vdmaps`].
pub type VdMapId = u32;

/// Pinhole or thin-lens perspective camera.
#[derive(Clone, Debug, PartialEq)]
pub struct Camera {
    pub position: Vec3,
    pub look_at: Vec3,
    pub up: Vec3,
    /// Vertical field of view in degrees.
    pub fov_deg: f32,
    /// Thin-lens aperture radius in scene units; 0 is a pinhole.
    pub lens_radius: f32,
    /// Distance to the plane in focus; only used when `lens_radius > 0`.
    pub focus_distance: f32,
    pub span: Span,
}

impl Camera {
    /// The angle one pixel of `film` spans at the centre of the image, in radians per unit of
    /// distance: the footprint of a camera ray at distance `d` is about `d · pixel_spread`.
    pub fn pixel_spread(&self, film: &Film) -> f32 {
        2.0 * (self.fov_deg.to_radians() * 0.5).tan() / film.height.max(1) as f32
    }
}

impl Default for Camera {
    fn default() -> Self {
        Camera {
            position: Vec3::new(0.0, 0.0, 5.0),
            look_at: Vec3::ZERO,
            up: Vec3::Y,
            fov_deg: 40.0,
            lens_radius: 0.0,
            focus_distance: 1.0,
            span: Span::NONE,
        }
    }
}

/// Film and sampling settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Film {
    pub width: u32,
    pub height: u32,
    /// Camera samples per pixel.
    pub spp: u32,
    /// Progressive passes (`render::progressive`): the frame is rendered this many times with
    /// fresh samples, photon maps and seeds and shrinking photon estimates, and averaged.
    pub passes: u32,
    /// How camera samples draw their random numbers (the pixel offset, the lens, light samples).
    pub sampler: Sampler,
    /// Maximum number of specular bounces (reflection/refraction) after the camera hit.
    pub max_depth: u32,
    pub seed: u64,
    /// Deepest subdivision level of a VD patch's on-the-fly bottom level (`2^L × 2^L` cells).
    pub vd_max_level: u32,
    /// How the frame is lit (photon mapping unless the scene asks for `integrator whitted`).
    pub integrator: Integrator,
    /// The hierarchy's node layout (`film { accel }`, `--accel`); `None` leaves it to the
    /// backend (`render::Backend::preferred_layout`).
    pub accel: Option<BvhLayout>,
    /// How the middle level is built (`film { accel LAYOUT BUILDER }`, `--accel`); `None` is
    /// the binned SAH on the CPU.
    pub builder: Option<BvhBuilder>,
    /// Scales the photon and gather counts ([`Scene::apply_quality`]).
    pub quality: Quality,
    /// The GPUs that render (`film { devices … }`); `--devices` wins over it.
    pub devices: DeviceList,
    /// Render only this part of the image (`--crop`); the EXR keeps the full size as its
    /// display window and the crop as its data window.
    pub crop: Option<CropWindow>,
    pub span: Span,
}

/// A crop window as fractions of the image, as pbrt's `--cropwindow x0 x1 y0 y1`: x from the
/// left edge, y from the top.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CropWindow {
    pub x0: f32,
    pub x1: f32,
    pub y0: f32,
    pub y1: f32,
}

impl CropWindow {
    /// Checks `0 <= x0 < x1 <= 1` and the same for y.
    pub fn new(x0: f32, x1: f32, y0: f32, y1: f32) -> Result<CropWindow, String> {
        let ok = |a: f32, b: f32| (0.0..=1.0).contains(&a) && (0.0..=1.0).contains(&b) && a < b;
        if ok(x0, x1) && ok(y0, y1) {
            Ok(CropWindow { x0, x1, y0, y1 })
        } else {
            Err(format!(
                "crop window {x0},{x1},{y0},{y1}: expected X0,X1,Y0,Y1 with 0 <= X0 < X1 <= 1 \
                 and 0 <= Y0 < Y1 <= 1"
            ))
        }
    }
}

impl Film {
    /// The crop's pixels `[x0, y0, x1, y1)` (rounded up as pbrt rounds them), or `None` without
    /// a crop. Empty when the crop falls between two pixel edges.
    pub fn crop_pixels(&self) -> Option<[u32; 4]> {
        let c = self.crop?;
        let (w, h) = (self.width.max(1) as f32, self.height.max(1) as f32);
        let at = |f: f32, n: f32| (n * f).ceil() as u32;
        Some([at(c.x0, w), at(c.y0, h), at(c.x1, w), at(c.y1, h)])
    }
}

/// A preset that scales photon mapping's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quality {
    /// Previews: an eighth of the photons, a quarter of the seeds and gather rays.
    Quick,
    /// The counts as written.
    Default,
    /// Reference stills: four times the photons, twice the seeds and gather rays.
    Reference,
}

/// How the top and middle levels' nodes are laid out (`film { accel }`, `--accel LAYOUT:BUILDER`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BvhLayout {
    /// The 4-wide BVH with the compact stack of paper 004 (`accel::qbvh`).
    #[default]
    Qbvh,
    /// A binary BVH in the QBVH's node format, so that the same traversal compares the two.
    Binary,
    /// The 8-wide compressed BVH of Ylitie et al. 2017 (`accel::wide`).
    Wide,
}

impl BvhLayout {
    /// Every layout, as `--accel` names them.
    pub const ALL: [BvhLayout; 3] = [BvhLayout::Qbvh, BvhLayout::Wide, BvhLayout::Binary];

    /// The layout's name on the command line and in the scene (`film { accel wide }`).
    pub fn name(self) -> &'static str {
        match self {
            BvhLayout::Qbvh => "qbvh",
            BvhLayout::Binary => "binary",
            BvhLayout::Wide => "wide",
        }
    }

    /// The layout called `name`.
    pub fn from_name(name: &str) -> Option<BvhLayout> {
        BvhLayout::ALL.into_iter().find(|l| l.name() == name)
    }
}

/// How the middle level's trees are built (`film { accel LAYOUT BUILDER }`, `--accel
/// LAYOUT:BUILDER`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BvhBuilder {
    /// The binned-SAH build on the CPU (`accel::bvh`), collapsed into the layout.
    #[default]
    CpuSah,
    /// The LBVH of Karras 2012 (Morton codes, a radix tree, boxes bottom up), collapsed into
    /// the wide layout, both on the GPU (`gpu::lbvh`, `gpu::wide_collapse`); the CPU backend
    /// builds the same tree with the twins (`accel::lbvh`, `accel::wide`).
    GpuLbvh,
    /// PLOC (Meister & Bittner 2018: nearest neighbours along the Morton curve merged round
    /// after round), collapsed into the wide layout, both on the GPU (`gpu::ploc`,
    /// `gpu::wide_collapse`); the CPU backend builds the same tree with the twins
    /// (`accel::ploc`, `accel::wide`).
    GpuPloc,
    /// Binned SAH (paper 003 chapter 4: 16 bins per axis, nodes split breadth first on the
    /// GPU), collapsed into the wide layout, both on the GPU (`gpu::sah_build`,
    /// `gpu::wide_collapse`); the CPU backend builds the same tree with the twins
    /// (`accel::sah_build`, `accel::wide`).
    GpuSah,
    /// The hybrid of paper 003 section 4.7.1: the top levels split by Morton code as the LBVH
    /// does, the rest by the binned SAH; on the GPU and in the twins as `GpuSah`.
    GpuHybrid,
    /// Not a tree: the two-level grid of paper 001 (`accel::grid`) for each triangle mesh's
    /// middle level, traversed by DDA; the top level stays a BVH in the layout. Meshes of VD
    /// patches and analytic spheres keep a `cpu_sah` tree. A GPU backend builds the grids
    /// itself (`gpu::grid`), every frame a mesh changes; the CPU backend builds the same words
    /// with the twin. `--accel grid` alone is `wide:grid`.
    Grid,
    /// Paper 002's SAH kd-tree over each triangle mesh's primitives (`accel::tri_kdtree`) as
    /// the middle level, walked with a short stack; the top level stays a BVH in the layout.
    /// Meshes of VD patches and analytic spheres keep a `cpu_sah` tree. Built by the CPU twin on
    /// both backends. `--accel kdtree` alone is `wide:kdtree`.
    Kdtree,
}

impl BvhBuilder {
    /// Every builder, as `--accel` names them.
    pub const ALL: [BvhBuilder; 7] = [
        BvhBuilder::CpuSah,
        BvhBuilder::GpuLbvh,
        BvhBuilder::GpuSah,
        BvhBuilder::GpuHybrid,
        BvhBuilder::GpuPloc,
        BvhBuilder::Grid,
        BvhBuilder::Kdtree,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BvhBuilder::CpuSah => "cpu_sah",
            BvhBuilder::GpuLbvh => "gpu_lbvh",
            BvhBuilder::GpuPloc => "gpu_ploc",
            BvhBuilder::GpuSah => "gpu_sah",
            BvhBuilder::GpuHybrid => "gpu_hybrid",
            BvhBuilder::Grid => "grid",
            BvhBuilder::Kdtree => "kdtree",
        }
    }

    pub fn from_name(name: &str) -> Option<BvhBuilder> {
        BvhBuilder::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Whether the builder makes trees in `layout` (the GPU builders collapse into the wide
    /// layout only; a grid sits under a top level of either layout).
    pub fn builds(self, layout: BvhLayout) -> bool {
        matches!(
            self,
            BvhBuilder::CpuSah | BvhBuilder::Grid | BvhBuilder::Kdtree
        ) || layout == BvhLayout::Wide
    }

    /// Whether a GPU backend builds the middle level itself (every builder but `cpu_sah` and
    /// `kdtree`).
    pub fn on_device(self) -> bool {
        !matches!(self, BvhBuilder::CpuSah | BvhBuilder::Kdtree)
    }

    /// Whether the middle level is a structure of its own rather than a BVH (`--accel grid`
    /// alone names it, under the wide layout's top level).
    pub fn is_structure(self) -> bool {
        matches!(self, BvhBuilder::Grid | BvhBuilder::Kdtree)
    }
}

/// How the numbers of a camera sample are drawn (`film { sampler }`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampler {
    /// Owen-scrambled Sobol points: consecutive numbers form 2D pairs, and the first `2^k`
    /// samples of every pair (indeed every aligned block of `2^k`) form a (0,2)-net, whatever
    /// the sample count. The pixel offset is the first pair.
    Sobol,
    /// Independent hashed numbers, with the pixel offset on a jittered grid of `spp` cells
    /// (the pixel centre at 1 spp).
    Independent,
}

/// How a frame is lit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Integrator {
    /// Direct light with shadow rays and specular reflection and refraction (the shade trees).
    Whitted,
    /// Whitted plus caustics from the caustic photon map and indirect diffuse light from
    /// final-gathered irradiance samples (paper 003 chapter 6).
    PhotonMap,
}

/// The largest accepted [`Film::vd_max_level`]: 256 × 256 cells per patch (the bottom level's
/// shared link table packs child indices for up to this level).
pub const VD_LEVEL_LIMIT: u32 = 8;
/// Default [`Film::vd_max_level`]: 64 × 64 cells per patch.
pub const DEFAULT_VD_MAX_LEVEL: u32 = 6;

impl Default for Film {
    fn default() -> Self {
        Film {
            width: 640,
            height: 480,
            spp: 4,
            passes: 1,
            sampler: Sampler::Sobol,
            max_depth: 8,
            seed: 0,
            vd_max_level: DEFAULT_VD_MAX_LEVEL,
            integrator: Integrator::PhotonMap,
            accel: None,
            builder: None,
            quality: Quality::Default,
            devices: DeviceList::Auto,
            crop: None,
            span: Span::NONE,
        }
    }
}

/// A named texture image (linear RGB, row 0 at the top, addressed by OBJ-style UVs with v up),
/// looked up at `uv · uv_scale + uv_offset`.
#[derive(Clone, Debug)]
pub struct Texture {
    pub name: String,
    pub path: PathBuf,
    pub image: Arc<TextureImage>,
    pub uv_scale: Vec2,
    pub uv_offset: Vec2,
    pub span: Span,
}

impl Texture {
    /// The texture's colour at the surface's `uv`, through its UV scale and offset. Twin of
    /// `sample_texture` in `shaders/shared/shading.wgsl`.
    pub fn sample(&self, uv: Vec2) -> Vec3 {
        self.image.sample(uv * self.uv_scale + self.uv_offset)
    }
}

/// Decoded texels of a [`Texture`], linear RGB.
#[derive(Clone, Debug, PartialEq)]
pub struct TextureImage {
    pub width: u32,
    pub height: u32,
    pub texels: Vec<Vec3>,
}

impl TextureImage {
    /// Bilinear lookup with wrap-around addressing; `uv` uses the OBJ convention (v = 1 is the top row).
    pub fn sample(&self, uv: Vec2) -> Vec3 {
        if self.width == 0 || self.height == 0 {
            return Vec3::ONE;
        }
        let (w, h) = (self.width as i64, self.height as i64);
        bilinear_texels(
            uv.x * self.width as f32,
            (1.0 - uv.y) * self.height as f32,
            |xi, yi| {
                let xi = xi.rem_euclid(w) as usize;
                let yi = yi.rem_euclid(h) as usize;
                self.texels[yi * self.width as usize + xi]
            },
        )
    }
}

/// Bilinear interpolation between texel centres at (`x`, `y`), in texel units from the image's
/// corner (centres at .5), the texels fetched by `texel(column, row)`, which applies the image's
/// addressing. Twin of `texel_corner` and its lerps in `shaders/shared/shading.wgsl`.
pub fn bilinear_texels(x: f32, y: f32, texel: impl Fn(i64, i64) -> Vec3) -> Vec3 {
    let (x, y) = (x - 0.5, y - 0.5);
    let (x0, y0) = (x.floor(), y.floor());
    let (fx, fy) = (x - x0, y - y0);
    let (x0, y0) = (x0 as i64, y0 as i64);
    let top = texel(x0, y0).lerp(texel(x0 + 1, y0), fx);
    let bottom = texel(x0, y0 + 1).lerp(texel(x0 + 1, y0 + 1), fx);
    top.lerp(bottom, fy)
}

/// What a surface does with light.
#[derive(Clone, Debug, PartialEq)]
pub enum MaterialKind {
    /// Lambertian reflection; the albedo is multiplied by the texture when one is given.
    Diffuse {
        albedo: Vec3,
        texture: Option<TextureId>,
    },
    /// Perfect specular reflection scaled by a constant `reflectance` (an idealised mirror).
    Mirror { reflectance: Vec3 },
    /// Dielectric interface of index `ior` (inside over outside); `fresnel` chooses the
    /// reflectance formula and `tint` scales transmission. With `roughness` above 0 the
    /// interface is rough: GGX microfacets of width `α = roughness²`, each a smooth interface
    /// ([`rough_alpha`], `cpu::rough`).
    Dielectric {
        ior: f32,
        tint: Vec3,
        fresnel: FresnelMode,
        roughness: f32,
    },
    /// Conductor: specular reflection whose reflectance is the exact conductor Fresnel term of
    /// the complex index `eta + i·k` (per RGB channel, relative to the outside) at the hit's
    /// angle, times `tint` (times the texture at the hit when one is given, as Mitsuba's
    /// `specular_reflectance` texture: [`Scene::material_at`]). Smooth at `roughness` 0, else
    /// GGX microfacets as for a dielectric.
    Conductor {
        eta: Vec3,
        k: Vec3,
        tint: Vec3,
        roughness: f32,
        texture: Option<TextureId>,
    },
    /// A diffuse base of `albedo` (times the texture when one is given) under a dielectric coat
    /// of index `ior`, smooth at `roughness` 0, else GGX microfacets as for a dielectric
    /// (`cpu::plastic`). `fdr_outside` and `fdr_inside` are the coat's hemispherical-average
    /// Fresnel reflectances for light arriving from outside and from inside
    /// ([`MaterialKind::plastic`] computes them).
    Plastic {
        albedo: Vec3,
        texture: Option<TextureId>,
        ior: f32,
        roughness: f32,
        fdr_outside: f32,
        fdr_inside: f32,
    },
    /// Emits `radiance` from its front side and reflects nothing. Every instance with this
    /// material is a light ([`Scene::add_emissive_lights`]): `samples` shadow rays per shading
    /// point go to points on its faces, and it emits photons. Gather rays that reach it see
    /// black, since those bring its light already.
    Emissive { radiance: Vec3, samples: u32 },
    /// The surface of a quad light ([`Scene::add_light_surfaces`]; scenes do not write it):
    /// black and opaque from both sides, showing the light's radiance from its front. The
    /// light's shadow rays and photons bring its light to other surfaces, so a gather ray that
    /// reaches it sees black (unlike [`MaterialKind::Emissive`], whose light only gather rays
    /// bring).
    LightSurface { radiance: Vec3 },
}

/// The GGX width `α = roughness²` of a rough material, or `None` for a smooth one (`roughness`
/// so small that `α` is under [`MIN_ROUGH_ALPHA`], where the lobe is a mirror in all but name).
pub fn rough_alpha(roughness: f32) -> Option<f32> {
    let alpha = roughness * roughness;
    (alpha >= MIN_ROUGH_ALPHA).then_some(alpha.min(1.0))
}

/// The complex index (`eta`, `k`) of a conductor whose reflectance at normal incidence is `r`
/// per channel and which reflects everything at grazing incidence: Gulbrandsen's
/// artist-friendly mapping ("Artist Friendly Metallic Fresnel", JCGT 2014) with a white edge
/// tint, `η = (1 − r)/(1 + r)`, `k = 2√r/(1 + r)`. How glTF's metals and MTL's reflective
/// materials, which give a colour rather than an index, become conductors.
pub fn conductor_from_reflectance(r: Vec3) -> (Vec3, Vec3) {
    let r = r.clamp(Vec3::ZERO, Vec3::splat(0.999));
    let eta = (Vec3::ONE - r) / (Vec3::ONE + r);
    let k = 2.0 * r.map(f32::sqrt) / (Vec3::ONE + r);
    (eta, k)
}

/// The smallest GGX width a rough material has: `roughness` 0.01.
pub const MIN_ROUGH_ALPHA: f32 = 1e-4;

impl MaterialKind {
    /// The GGX width of a rough conductor, dielectric or plastic coat ([`rough_alpha`]);
    /// `None` for every other material.
    pub fn alpha(&self) -> Option<f32> {
        match *self {
            MaterialKind::Conductor { roughness, .. }
            | MaterialKind::Dielectric { roughness, .. }
            | MaterialKind::Plastic { roughness, .. } => rough_alpha(roughness),
            _ => None,
        }
    }

    /// Whether the material has a glossy lobe: a rough conductor or dielectric, or a plastic
    /// (whose coat is glossy even when smooth, beside its diffuse base).
    pub fn is_glossy(&self) -> bool {
        matches!(self, MaterialKind::Plastic { .. }) || self.alpha().is_some()
    }

    /// The texture slot of a material that takes one (diffuse, a plastic's base, and a
    /// conductor's tint).
    pub fn texture_mut(&mut self) -> Option<&mut Option<TextureId>> {
        match self {
            MaterialKind::Diffuse { texture, .. }
            | MaterialKind::Plastic { texture, .. }
            | MaterialKind::Conductor { texture, .. } => Some(texture),
            _ => None,
        }
    }

    /// A plastic's base constants: `1 / (η² (1 − F̄_inside))`, which scales its albedo, and
    /// `1 − F̄_outside`, the share of diffuse light its coat lets in (`cpu::plastic`); `None`
    /// for other materials.
    pub fn plastic_constants(&self) -> Option<(f32, f32)> {
        match *self {
            MaterialKind::Plastic {
                ior,
                fdr_outside,
                fdr_inside,
                ..
            } => Some((
                1.0 / (ior * ior * (1.0 - fdr_inside).max(1e-6)),
                1.0 - fdr_outside,
            )),
            _ => None,
        }
    }

    /// A plastic of diffuse `albedo` (and `texture`) under a coat of index `ior` and
    /// `roughness`, with the coat's average Fresnel reflectances from both sides.
    pub fn plastic(albedo: Vec3, texture: Option<TextureId>, ior: f32, roughness: f32) -> Self {
        MaterialKind::Plastic {
            albedo,
            texture,
            ior,
            roughness,
            fdr_outside: fresnel::diffuse_fresnel(1.0 / ior),
            fdr_inside: fresnel::diffuse_fresnel(ior),
        }
    }
}

/// How a dielectric's Fresnel reflectance is computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FresnelMode {
    /// The exact unpolarised Fresnel equations (the average of the s and p reflectances).
    #[default]
    Exact,
    /// Schlick's approximation `R0 + (1 − R0)(1 − cos)⁵`.
    Schlick,
}

/// A named material.
#[derive(Clone, Debug, PartialEq)]
pub struct Material {
    pub name: String,
    pub kind: MaterialKind,
    pub span: Span,
}

/// A named mesh: its geometry (loaded or generated), and optionally a VD map on its quads.
#[derive(Clone, Debug)]
pub struct Mesh {
    pub name: String,
    /// Where the geometry came from, for `caustica info` and error messages.
    pub origin: MeshOrigin,
    pub data: Arc<MeshData>,
    /// When set, every quad of the mesh is a vector-displacement patch carrying this map.
    pub displacement: Option<VdMapId>,
    pub span: Span,
}

/// Where a mesh's geometry came from.
#[derive(Clone, Debug, PartialEq)]
pub enum MeshOrigin {
    File(PathBuf),
    Inline,
    Sphere,
    /// An analytic sphere of `radius` about the origin (`mesh { sphere analytic }`): rays meet
    /// the exact sphere, with its exact normals, on both backends. `data` holds a tessellation
    /// that stands in where faces are needed (`caustica info`'s counts).
    AnalyticSphere {
        radius: f32,
    },
    Quad,
    Box,
    /// The surface of the quad light of this index ([`Scene::add_light_surfaces`]).
    Light(usize),
}

/// One placement of a mesh in the world.
#[derive(Clone, Debug)]
pub struct Instance {
    pub mesh: MeshId,
    pub material: MaterialId,
    /// Object space to world space.
    pub transform: Affine3A,
    pub span: Span,
}

/// A light source. Powers are radiant flux in watts per RGB channel (scene units are metres).
#[derive(Clone, Debug, PartialEq)]
pub enum LightKind {
    /// Isotropic point light of total power `power`.
    Point { position: Vec3, power: Vec3 },
    /// Point light emitting into a cone around `direction`, with a smooth falloff between
    /// `cone_inner_deg` and `cone_outer_deg` (half-angles). `power` is the power of the isotropic
    /// point light with the same intensity (pbrt's convention for spot lights).
    Spot {
        position: Vec3,
        direction: Vec3,
        power: Vec3,
        cone_inner_deg: f32,
        cone_outer_deg: f32,
    },
    /// Light arriving from infinitely far away along `direction`, with irradiance `irradiance`
    /// (W/m²) on a surface facing it, from a disk of apparent diameter `angle_deg` around
    /// `-direction` (0: from that one direction; the sun's 0.53° casts soft shadows).
    Directional {
        direction: Vec3,
        irradiance: Vec3,
        angle_deg: f32,
    },
    /// One-sided parallelogram emitter at `corner` spanned by `edge_u` and `edge_v`, emitting
    /// uniform `radiance` on the side of `edge_u × edge_v`. `samples` shadow rays per shading point.
    Quad {
        corner: Vec3,
        edge_u: Vec3,
        edge_v: Vec3,
        radiance: Vec3,
        samples: u32,
    },
    /// The faces of an instance with an [`MaterialKind::Emissive`] material, emitting uniform
    /// `radiance` from their front sides ([`Scene::add_emissive_lights`]). Points on them are
    /// chosen in proportion to area: `samples` shadow rays per shading point.
    Mesh {
        /// Index into [`Scene::instances`].
        instance: u32,
        emitter: Arc<MeshEmitter>,
        radiance: Vec3,
        samples: u32,
    },
    /// An emissive analytic sphere ([`SphereLight`]), emitting uniform `radiance` from its
    /// outer side ([`Scene::add_emissive_lights`]). Its `samples` shadow rays per shading point
    /// are spread over the cone of directions it covers.
    Sphere {
        /// Index into [`Scene::instances`].
        instance: u32,
        sphere: SphereLight,
        radiance: Vec3,
        samples: u32,
    },
    /// Radiance from every direction, infinitely far away ([`Environment`]): at most one per
    /// scene. Camera and specular rays that leave the scene see it.
    Environment(Environment),
}

/// How an area light's shadow rays choose its points: uniformly over its `area`, or for a
/// `sphere`, uniformly over the cone of directions it covers; `samples` of them per shading
/// point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AreaSampling {
    pub area: f32,
    pub samples: u32,
    pub sphere: Option<SphereLight>,
}

impl LightKind {
    /// How a quad, mesh or sphere light is sampled; `None` for other lights.
    pub fn area_sampling(&self) -> Option<AreaSampling> {
        match *self {
            LightKind::Quad {
                edge_u,
                edge_v,
                samples,
                ..
            } => Some(AreaSampling {
                area: edge_u.cross(edge_v).length(),
                samples: samples.max(1),
                sphere: None,
            }),
            LightKind::Mesh {
                ref emitter,
                samples,
                ..
            } => Some(AreaSampling {
                area: emitter.area,
                samples: samples.max(1),
                sphere: None,
            }),
            LightKind::Sphere {
                sphere, samples, ..
            } => Some(AreaSampling {
                area: sphere.area(),
                samples: samples.max(1),
                sphere: Some(sphere),
            }),
            _ => None,
        }
    }
}

impl AreaSampling {
    /// The density per unit solid angle with which one shadow ray chooses the direction to a
    /// point of the light at `distance`, where the direction makes cosine `cos_light` with the
    /// light's normal, times the shadow rays per point (the count multiple importance sampling
    /// weighs); 0 from behind.
    pub fn counted_pdf(&self, distance: f32, cos_light: f32) -> f32 {
        if !(cos_light > 0.0 && self.area > 0.0) {
            return 0.0;
        }
        self.samples as f32 * distance * distance / (cos_light * self.area)
    }

    /// [`Self::counted_pdf`] for a ray from `origin` that met the light `distance` away at
    /// cosine `cos_light` with its normal: a sphere light's density is its cone's
    /// ([`SphereLight::pdf`]), times the shadow rays per point.
    pub fn counted_pdf_from(&self, origin: Vec3, distance: f32, cos_light: f32) -> f32 {
        match self.sphere {
            Some(sphere) if cos_light > 0.0 => self.samples as f32 * sphere.pdf(origin),
            Some(_) => 0.0,
            None => self.counted_pdf(distance, cos_light),
        }
    }
}

/// The cosine of the half-angle of a directional light's cone of directions, from its apparent
/// diameter in degrees, taken between 0 and 90 (1 for a single direction). Both backends use
/// this value.
pub fn directional_cos_max(angle_deg: f32) -> f32 {
    (0.5 * angle_deg.clamp(0.0, 90.0)).to_radians().cos()
}

/// The radius of the disk a directional light's photons leave from, for a scene of radius
/// `scene_radius`: the scene's, grown for a sun by how far its directions stray (`tan` of the
/// cone's half-angle per unit of travel) over the about 3 radii a photon crosses.
pub fn directional_disk_radius(scene_radius: f32, cos_max: f32) -> f32 {
    let tan_max = (1.0 - cos_max * cos_max).max(0.0).sqrt() / cos_max;
    scene_radius * (1.0 + 3.03 * tan_max)
}

/// The emitting faces of one instance in world space: its triangles, and its quads split along
/// `v0 v2`, each with the fraction of the total area up to and including it.
#[derive(Clone, Default, PartialEq)]
pub struct MeshEmitter {
    pub triangles: Vec<EmitterTriangle>,
    /// Total area of the triangles.
    pub area: f32,
}

/// A world-space emitting triangle `p0, p0 + e1, p0 + e2`; `normal` is the unit normal of its
/// emitting side and `cdf` the fraction of the emitter's area up to and including it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EmitterTriangle {
    pub p0: Vec3,
    pub e1: Vec3,
    pub e2: Vec3,
    pub normal: Vec3,
    pub cdf: f32,
}

impl std::fmt::Debug for MeshEmitter {
    /// The counts, not every triangle (a lamp has thousands).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MeshEmitter {{ {} triangles, area {} }}",
            self.triangles.len(),
            self.area
        )
    }
}

impl MeshEmitter {
    /// The emitting faces of `data` placed by `transform`; faces of zero area are left out.
    /// Front sides are the sides the renderer's geometric normals point to (the winding's,
    /// turned by the transform like a normal).
    pub fn new(data: &MeshData, transform: &Affine3A) -> MeshEmitter {
        let flip = if transform.matrix3.determinant() < 0.0 {
            -1.0
        } else {
            1.0
        };
        let mut triangles = Vec::with_capacity(data.triangles.len() + 2 * data.quads.len());
        let corners = data.triangles.iter().copied().chain(
            data.quads
                .iter()
                .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]),
        );
        let mut total = 0.0f64;
        for [a, b, c] in corners {
            let [p0, p1, p2] =
                [a, b, c].map(|v| transform.transform_point3(data.positions[v as usize]));
            let (e1, e2) = (p1 - p0, p2 - p0);
            let cross = e1.cross(e2) * flip;
            let area = 0.5 * cross.length();
            if !(area > 0.0 && area.is_finite()) {
                continue;
            }
            total += area as f64;
            triangles.push(EmitterTriangle {
                p0,
                e1,
                e2,
                normal: cross.normalize(),
                cdf: total as f32,
            });
        }
        for t in &mut triangles {
            t.cdf = (t.cdf as f64 / total) as f32;
        }
        if let Some(last) = triangles.last_mut() {
            last.cdf = 1.0;
        }
        MeshEmitter {
            triangles,
            area: total as f32,
        }
    }

    /// A point on the emitter and the unit normal there, chosen in proportion to area from two
    /// uniform numbers: `u.x` picks the triangle and, rescaled, the point with `u.y`.
    pub fn sample(&self, u: Vec2) -> (Vec3, Vec3) {
        sample_emitter_triangles(&self.triangles, u)
    }
}

/// [`MeshEmitter::sample`] over a slice of triangles whose `cdf` ends at 1. Twin of
/// `sample_mesh_light` in `shaders/shared/emitters.wgsl`.
pub fn sample_emitter_triangles(triangles: &[EmitterTriangle], u: Vec2) -> (Vec3, Vec3) {
    if triangles.is_empty() {
        return (Vec3::ZERO, Vec3::Z);
    }
    let (i, x) = pick_by_cdf(triangles.len(), |k| triangles[k].cdf, u.x);
    let t = &triangles[i];
    (
        triangle_point(t.p0, t.e1, t.e2, Vec2::new(x, u.y)),
        t.normal,
    )
}

/// The entry of `count` (at least 1) whose cumulative fraction `cdf(i)` (ascending, ending at 1)
/// first exceeds `u`, and `u` rescaled to [0, 1] within that entry's share. Twin of
/// `pick_by_cdf` in the WGSL samplers of mesh lights.
pub fn pick_by_cdf(count: usize, cdf: impl Fn(usize) -> f32, u: f32) -> (usize, f32) {
    let (mut lo, mut hi) = (0usize, count - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if cdf(mid) <= u {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let below = if lo == 0 { 0.0 } else { cdf(lo - 1) };
    let width = cdf(lo) - below;
    let x = if width > 0.0 {
        ((u - below) / width).clamp(0.0, 1.0)
    } else {
        0.5
    };
    (lo, x)
}

/// The point of triangle `p0, p0 + e1, p0 + e2` for the uniform numbers `u` (uniform in area).
pub fn triangle_point(p0: Vec3, e1: Vec3, e2: Vec3, u: Vec2) -> Vec3 {
    let root = u.x.sqrt();
    p0 + e1 * (u.y * root) + e2 * (root * (1.0 - u.y))
}

/// A light with the span that declared it.
#[derive(Clone, Debug, PartialEq)]
pub struct Light {
    pub kind: LightKind,
    pub span: Span,
}

/// Photon-mapping settings (paper 003 chapter 6).
#[derive(Clone, Debug, PartialEq)]
pub struct PhotonSettings {
    pub global: u32,
    pub caustic: u32,
    pub max_bounces: u32,
    /// k of the k-nearest-neighbour radiance estimate.
    pub knn: u32,
    /// Largest search radius of a radiance estimate, in scene units; 0 lets the renderer choose
    /// ([`PhotonSettings::search_radius`]).
    pub max_radius: f32,
    /// Scales the search radius: below 1 in the later passes of a progressive render
    /// (`render::progressive`); not part of the language.
    pub radius_scale: f32,
    /// How photons are weighted by their distance in a radiance estimate.
    pub filter: PhotonFilter,
    pub span: Span,
}

/// The weighting of photons in a radiance estimate (Jensen 2001, section 7.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PhotonFilter {
    /// Every photon in the disc counts fully.
    None,
    /// Weight `1 − d/(k·r)`, `k ≥ 1`: sharper caustic edges.
    Cone { k: f32 },
    /// Weight `1 − d²/r²` (the 2D Epanechnikov kernel).
    Epanechnikov,
}

impl PhotonSettings {
    /// The search radius of the estimates: `max_radius`, or when it is 0 a tenth of the radius
    /// of the sphere around the scene (`scene_radius`), large enough that the k nearest photons
    /// decide the radius wherever the map is not sparse.
    pub fn search_radius(&self, scene_radius: f32) -> f32 {
        let r = if self.max_radius > 0.0 {
            self.max_radius
        } else {
            0.1 * scene_radius
        };
        r * self.radius_scale
    }
}

impl Default for PhotonSettings {
    fn default() -> Self {
        PhotonSettings {
            global: 200_000,
            caustic: 100_000,
            max_bounces: 6,
            knn: 64,
            max_radius: 0.0,
            radius_scale: 1.0,
            filter: PhotonFilter::Cone { k: 1.1 },
            span: Span::NONE,
        }
    }
}

/// Progressive passes of `quality reference` when the scene sets none.
pub const REFERENCE_PASSES: u32 = 16;

/// The default minimum seed density β of `gather { min_density }` (measured on the Cornell
/// box: docs/architecture.md, "A minimum seed density").
pub const DEFAULT_MIN_SEED_DENSITY: f32 = 0.5;

/// The default of `gather { precomputed_irradiance }`: every 4th global photon, as in
/// Christensen (1999).
pub const DEFAULT_PRECOMPUTED_IRRADIANCE: u32 = 4;

/// Final-gather settings (paper 003 section 6.2.3).
#[derive(Clone, Debug, PartialEq)]
pub struct GatherSettings {
    /// Number of irradiance seeds placed by adaptive seeding.
    pub seeds: u32,
    /// Hemisphere rays per seed.
    pub rays: u32,
    /// Levels of the screen-space quadtree.
    pub quadtree_levels: u32,
    /// The minimum seed density β in `0..=1`: this share of the seeds is handed down the
    /// quadtree in proportion to the shading points, the rest in proportion to geometric error.
    pub min_density: f32,
    /// Christensen's precomputed irradiance: every `precomputed_irradiance`-th photon of the
    /// global map carries the irradiance estimated at it, and a gather ray's diffuse hit takes
    /// the nearest such photon's whose normal agrees ([`crate::render::irradiance_photons`]);
    /// 0 makes a full density estimate at every hit instead.
    pub precomputed_irradiance: u32,
    pub span: Span,
}

impl Default for GatherSettings {
    fn default() -> Self {
        GatherSettings {
            seeds: 4096,
            rays: 128,
            quadtree_levels: 7,
            min_density: DEFAULT_MIN_SEED_DENSITY,
            precomputed_irradiance: DEFAULT_PRECOMPUTED_IRRADIANCE,
            span: Span::NONE,
        }
    }
}

/// A layer of the output EXR besides the colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Aov {
    /// Surface albedo at the camera samples' first hits, averaged (EXR `Albedo.R/G/B`).
    Albedo,
    /// World-space normals at the first hits, averaged and normalised: geometric (`N.X/Y/Z`)
    /// and shading (`Ns.X/Y/Z`).
    Normal,
    /// Camera-space depth of the mean first-hit position (EXR `Z`); infinite where no sample
    /// hit anything.
    Depth,
    /// World-space position of the first hits, averaged over the samples that hit (`P.X/Y/Z`;
    /// zero where none did).
    Position,
    /// Which instance and which primitive of its mesh the camera ray through the pixel centre
    /// hit first (channels `instance`, `prim`; −1 for a miss). Exact up to 2^24.
    Id,
    /// The global photon map's radiance estimate alone at the first diffuse surface each camera
    /// sample sees directly (albedo/π times the photon flux density): a debug view.
    PhotonsGlobal,
    /// The caustic photon map's radiance estimate alone, seen the same way.
    PhotonsCaustic,
    /// Photon mapping's components of the colour: direct light and everything the shade trees
    /// carry (emission, specular reflection and refraction of them)...
    Direct,
    /// ... indirect diffuse light from the interpolated irradiance samples ...
    Indirect,
    /// ... and caustics from the caustic map; `direct + indirect + caustic` is the colour.
    Caustic,
    /// How many irradiance seeds lie in each pixel (channel `count`).
    Seeds,
}

impl Aov {
    pub const ALL: [Aov; 11] = [
        Aov::Albedo,
        Aov::Normal,
        Aov::Depth,
        Aov::Position,
        Aov::Id,
        Aov::PhotonsGlobal,
        Aov::PhotonsCaustic,
        Aov::Direct,
        Aov::Indirect,
        Aov::Caustic,
        Aov::Seeds,
    ];

    /// The layer's name in the language (`render::aov_layers` names its EXR channels).
    pub fn name(self) -> &'static str {
        match self {
            Aov::Albedo => "albedo",
            Aov::Normal => "normal",
            Aov::Depth => "depth",
            Aov::Position => "position",
            Aov::Id => "id",
            Aov::PhotonsGlobal => "photons_global",
            Aov::PhotonsCaustic => "photons_caustic",
            Aov::Direct => "direct",
            Aov::Indirect => "indirect",
            Aov::Caustic => "caustic",
            Aov::Seeds => "seeds",
        }
    }

    pub fn from_name(name: &str) -> Option<Aov> {
        Aov::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// Where and what to write.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputSettings {
    /// Output path pattern; a run of `#` is replaced by the zero-padded frame number.
    /// Relative paths are relative to the current directory of the process.
    pub path: String,
    /// Extra layers written beside the colour.
    pub layers: Vec<Aov>,
    pub span: Span,
}

impl Default for OutputSettings {
    fn default() -> Self {
        OutputSettings {
            path: "out/frame_####.exr".into(),
            layers: Vec::new(),
            span: Span::NONE,
        }
    }
}

impl OutputSettings {
    /// The output path for `frame`: the first run of `#` becomes the zero-padded frame number.
    /// A pattern without `#` is used as it is.
    pub fn path_for_frame(&self, frame: i64) -> PathBuf {
        expand_frame_pattern(&self.path, frame)
    }
}

/// Replaces the first run of `#` in `pattern` by `frame`, zero-padded to the run's length.
pub fn expand_frame_pattern(pattern: &str, frame: i64) -> PathBuf {
    if let Some(start) = pattern.find('#') {
        let len = pattern[start..].chars().take_while(|&c| c == '#').count();
        let number = if frame < 0 {
            format!("-{:0width$}", -frame, width = len)
        } else {
            format!("{:0width$}", frame, width = len)
        };
        PathBuf::from(format!(
            "{}{}{}",
            &pattern[..start],
            number,
            &pattern[start + len..]
        ))
    } else {
        PathBuf::from(pattern)
    }
}

/// The frames a scene file describes: `first..=last` at `fps`.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameRange {
    pub first: i64,
    pub last: i64,
    pub fps: f32,
    pub span: Span,
}

impl Default for FrameRange {
    fn default() -> Self {
        FrameRange {
            first: 1,
            last: 1,
            fps: 24.0,
            span: Span::NONE,
        }
    }
}

impl FrameRange {
    /// Scene time in seconds of `frame`: frame `first` is at time 0.
    pub fn time_of(&self, frame: i64) -> f32 {
        (frame - self.first) as f32 / self.fps
    }

    /// How many frames the range holds.
    pub fn len(&self) -> u64 {
        (self.last as i128 - self.first as i128 + 1).clamp(0, u64::MAX as i128) as u64
    }

    /// Whether the range holds no frame (never, for a range the language built).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// At most `count` (≥ 2) of the range's frames in order: all of them when there are no
    /// more, else the first, the last and evenly spaced ones between (`caustica check` of a
    /// long animation).
    pub fn sample(&self, count: u64) -> Vec<i64> {
        let len = self.len();
        if len <= count {
            return (self.first..=self.last).collect();
        }
        let count = count.max(2);
        let mut frames: Vec<i64> = (0..count)
            .map(|i| {
                let offset = (len as u128 - 1) * i as u128 / (count as u128 - 1);
                (self.first as i128 + offset as i128) as i64
            })
            .collect();
        frames.dedup();
        frames
    }
}

/// Everything a scene is, evaluated for one frame.
#[derive(Clone, Debug, Default)]
pub struct Scene {
    /// The frame this scene was evaluated for, and its time in seconds.
    pub frame: i64,
    pub time: f32,
    pub camera: Camera,
    pub film: Film,
    pub materials: Vec<Material>,
    pub textures: Vec<Texture>,
    pub vdmaps: Vec<VdMap>,
    pub meshes: Vec<Mesh>,
    pub instances: Vec<Instance>,
    pub lights: Vec<Light>,
    pub photons: PhotonSettings,
    pub gather: GatherSettings,
    pub output: OutputSettings,
    pub frames: FrameRange,
}

/// How far behind its emitting plane a quad light's surface sits, relative to the largest
/// coordinate of its corners (at least 1): photons leave the plane away from it and shadow rays
/// end on the plane, so neither can hit the light's own surface, while everything else sees it
/// where the light is.
pub const LIGHT_SURFACE_OFFSET: f32 = 1e-5;

impl Scene {
    /// Gives every quad light of non-zero area a surface, as pbrt's and Mitsuba's area lights
    /// are shapes: a mesh of two triangles with a [`MaterialKind::LightSurface`] material,
    /// placed [`LIGHT_SURFACE_OFFSET`] behind the light and appended after the scene's own
    /// meshes, materials and instances (so their indices do not change). The light then blocks
    /// what passes behind it (shadow rays of other lights, photons, gather rays and camera
    /// rays) and camera and specular rays see it through the ordinary intersection.
    pub fn add_light_surfaces(&mut self) {
        for (index, light) in self.lights.iter().enumerate() {
            let LightKind::Quad {
                corner,
                edge_u,
                edge_v,
                radiance,
                ..
            } = light.kind
            else {
                continue;
            };
            let normal = edge_u.cross(edge_v).normalize_or_zero();
            if normal == Vec3::ZERO {
                continue;
            }
            let corners = [
                corner,
                corner + edge_u,
                corner + edge_u + edge_v,
                corner + edge_v,
            ];
            let scale = corners
                .iter()
                .fold(1.0f32, |m, c| m.max(c.abs().max_element()));
            let back = normal * (LIGHT_SURFACE_OFFSET * scale);
            let data = MeshData {
                positions: corners.iter().map(|c| *c - back).collect(),
                normals: Vec::new(),
                uvs: Vec::new(),
                // Wound so that the geometric normal is the light's, edge_u × edge_v.
                triangles: vec![[0, 1, 2], [0, 2, 3]],
                quads: Vec::new(),
            };
            let name = format!("light {}", index + 1);
            self.materials.push(Material {
                name: name.clone(),
                kind: MaterialKind::LightSurface { radiance },
                span: light.span,
            });
            self.meshes.push(Mesh {
                name,
                origin: MeshOrigin::Light(index),
                data: Arc::new(data),
                displacement: None,
                span: light.span,
            });
            self.instances.push(Instance {
                mesh: (self.meshes.len() - 1) as MeshId,
                material: (self.materials.len() - 1) as MaterialId,
                transform: Affine3A::IDENTITY,
                span: light.span,
            });
        }
    }

    /// Makes every instance with an emissive material a light ([`LightKind::Mesh`]), appended
    /// after the scene's own lights. The surfaces of quad lights ([`Scene::add_light_surfaces`])
    /// are not emissive and stay out. Instances whose faces have no area are left out; a
    /// displaced mesh emits from its undisplaced faces (with a warning).
    pub fn add_emissive_lights(&mut self) {
        for (index, instance) in self.instances.iter().enumerate() {
            let Some(MaterialKind::Emissive { radiance, samples }) = self
                .materials
                .get(instance.material as usize)
                .map(|m| &m.kind)
            else {
                continue;
            };
            let Some(mesh) = self.meshes.get(instance.mesh as usize) else {
                continue;
            };
            if radiance.max_element() <= 0.0 {
                continue;
            }
            if let MeshOrigin::AnalyticSphere { radius } = mesh.origin {
                // The evaluator refuses a sphere scaled unevenly (an ellipsoid).
                let Some(sphere) = SphereLight::placed(radius, &instance.transform) else {
                    log::warn!(
                        "mesh \"{}\" is an analytic sphere scaled unevenly: it does not emit",
                        mesh.name
                    );
                    continue;
                };
                self.lights.push(Light {
                    kind: LightKind::Sphere {
                        instance: index as u32,
                        sphere,
                        radiance: *radiance,
                        samples: *samples,
                    },
                    span: instance.span,
                });
                continue;
            }
            if mesh.displacement.is_some() {
                log::warn!(
                    "mesh \"{}\" is displaced and emissive: it emits from its undisplaced faces",
                    mesh.name
                );
            }
            let emitter = MeshEmitter::new(&mesh.data, &instance.transform);
            if emitter.triangles.is_empty() {
                continue;
            }
            self.lights.push(Light {
                kind: LightKind::Mesh {
                    instance: index as u32,
                    emitter: Arc::new(emitter),
                    radiance: *radiance,
                    samples: *samples,
                },
                span: instance.span,
            });
        }
    }

    /// For each instance, the area light whose surface it is (a quad light's surface or an
    /// emissive instance) and how that light's shadow rays choose points on it: what multiple
    /// importance sampling needs when a ray sampled by a glossy surface meets the light.
    pub fn instance_area_lights(&self) -> Vec<Option<(u32, AreaSampling)>> {
        let sampled = |index: usize| {
            let sampling = self.lights.get(index)?.kind.area_sampling()?;
            Some((index as u32, sampling))
        };
        // A quad light's surface names its light; an emissive instance is named by its light.
        let mut out: Vec<Option<(u32, AreaSampling)>> = self
            .instances
            .iter()
            .map(
                |i| match self.meshes.get(i.mesh as usize).map(|m| &m.origin) {
                    Some(MeshOrigin::Light(index)) => sampled(*index),
                    _ => None,
                },
            )
            .collect();
        for (index, light) in self.lights.iter().enumerate() {
            if let LightKind::Mesh { instance, .. } | LightKind::Sphere { instance, .. } =
                light.kind
            {
                if let Some(slot) = out.get_mut(instance as usize) {
                    *slot = sampled(index);
                }
            }
        }
        out
    }

    /// The scene's environment light, if it has one.
    pub fn environment(&self) -> Option<&Environment> {
        self.lights.iter().find_map(|l| match &l.kind {
            LightKind::Environment(e) => Some(e),
            _ => None,
        })
    }

    /// Material `id` at a hit with texture coordinates `uv`: a textured conductor's tint times
    /// its texture there (the texture then used up), every other material as it is (their
    /// textures are looked up where their albedo is). Twin of `material_at` in
    /// `shaders/shared/shading.wgsl`.
    pub fn material_at(&self, id: MaterialId, uv: Vec2) -> std::borrow::Cow<'_, MaterialKind> {
        let kind = &self.materials[id as usize].kind;
        match *kind {
            MaterialKind::Conductor {
                eta,
                k,
                tint,
                roughness,
                texture: Some(t),
            } => std::borrow::Cow::Owned(MaterialKind::Conductor {
                eta,
                k,
                tint: tint * self.textures[t as usize].sample(uv),
                roughness,
                texture: None,
            }),
            _ => std::borrow::Cow::Borrowed(kind),
        }
    }

    /// How many texels the scene's textures hold together: the GPU's texel array holds them
    /// first and the environment map after them.
    pub fn texture_texel_count(&self) -> usize {
        self.textures.iter().map(|t| t.image.texels.len()).sum()
    }

    /// Scales the photon counts, seeds and gather rays by `film.quality` and resets it to
    /// `Default`, so that applying it twice changes nothing.
    pub fn apply_quality(&mut self) {
        let scale = |v: u32, num: u64, den: u64, min: u32| -> u32 {
            ((v as u64 * num / den).min(u32::MAX as u64) as u32).max(min.min(v))
        };
        match self.film.quality {
            Quality::Default => {}
            Quality::Quick => {
                self.photons.global = scale(self.photons.global, 1, 8, 1000);
                self.photons.caustic = scale(self.photons.caustic, 1, 8, 1000);
                self.gather.seeds = scale(self.gather.seeds, 1, 4, 64);
                self.gather.rays = scale(self.gather.rays, 1, 4, 16);
            }
            Quality::Reference => {
                // Reference stills converge: progressive passes unless the scene says how many.
                if self.film.passes == 1 {
                    self.film.passes = REFERENCE_PASSES;
                }
                self.photons.global = scale(self.photons.global, 4, 1, 0);
                self.photons.caustic = scale(self.photons.caustic, 4, 1, 0);
                self.gather.seeds = scale(self.gather.seeds, 2, 1, 0);
                self.gather.rays = scale(self.gather.rays, 2, 1, 0);
            }
        }
        self.film.quality = Quality::Default;
    }
}

/// Loads the files a scene refers to. `lang::eval` calls it while evaluating a scene, so that a
/// file that is missing or malformed is reported at the place that names it; `io::AssetCache`
/// implements it (with a cache, so an animation loads each file once).
pub trait AssetLoader: Sync {
    /// Loads a triangle/quad mesh from an OBJ or PLY file (either may be gzip-compressed), with
    /// its faces split by the materials an OBJ file's MTL libraries give them.
    fn load_mesh(&self, path: &std::path::Path) -> Result<Arc<MeshAsset>, String>;
    /// Loads a texture (PNG, JPEG or EXR) as linear RGB. PNG and JPEG are decoded from sRGB.
    /// It colours an albedo or a tint: the loader warns about texels outside 0..1.
    fn load_texture(&self, path: &std::path::Path) -> Result<Arc<TextureImage>, String>;
    /// Loads a float image holding a vector displacement map (EXR), channels R, G, B as stored.
    fn load_vd_image(&self, path: &std::path::Path) -> Result<Arc<VdImage>, String>;
    /// The tiles of a UDIM map that exist: `pattern` is a path whose file name holds one of
    /// [`vdmap::UDIM_TOKENS`]; each file that matches it, with its tile number
    /// (`1001 + U + 10·V`), ascending by number.
    fn find_udim_tiles(
        &self,
        pattern: &std::path::Path,
    ) -> Result<Vec<(u32, std::path::PathBuf)>, String>;
    /// Loads a latitude-longitude environment map (EXR, Radiance HDR, or PNG/JPEG from sRGB)
    /// with its sampling distribution.
    fn load_environment(&self, path: &std::path::Path) -> Result<Arc<EnvMap>, String>;
    /// Loads a scene file (glTF 2.0, `.gltf` or `.glb`) for `import`.
    fn load_scene_file(&self, path: &std::path::Path) -> Result<Arc<SceneAsset>, String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quality_presets_scale_photons_and_gather_once() {
        let mut scene = Scene::default();
        scene.film.quality = Quality::Quick;
        scene.apply_quality();
        assert_eq!(scene.photons.global, 25_000);
        assert_eq!(scene.photons.caustic, 12_500);
        assert_eq!((scene.gather.seeds, scene.gather.rays), (1024, 32));
        scene.apply_quality();
        assert_eq!(
            scene.photons.global, 25_000,
            "applying twice changes nothing"
        );
        let mut scene = Scene::default();
        scene.film.quality = Quality::Reference;
        scene.apply_quality();
        assert_eq!(scene.photons.global, 800_000);
        assert_eq!((scene.gather.seeds, scene.gather.rays), (8192, 256));
    }
}
