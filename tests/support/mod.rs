//! Helpers shared by several integration tests: a seeded generator, IR builders, the analytic
//! sphere scene, a VD map wrapper, measures of a VD patch's tessellation, and a backend that counts its frames and fails on demand. Each test file uses what it needs.
#![allow(dead_code)]

pub mod cli;

use std::f32::consts::PI;
use std::path::PathBuf;
use std::sync::Arc;

use caustica::scene::{
    shapes, Camera, Film, Instance, Light, LightKind, Material, MaterialKind, Mesh, MeshData,
    MeshOrigin, Scene, Span, VdImage, VdMap, VdSpace,
};
use glam::{Affine3A, Vec2, Vec3};

/// Whether the environment demands the shared assets (`CAUSTICA_REQUIRE_ASSETS=1`, as CI sets
/// it): then a missing asset fails the test instead of skipping it.
pub fn assets_required() -> bool {
    std::env::var("CAUSTICA_REQUIRE_ASSETS")
        .is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// `../shared/assets/<relative>` beside the repository when it exists. Otherwise a test failure
/// under `CAUSTICA_REQUIRE_ASSETS=1`, or `None` after printing why the test skips.
pub fn shared_asset(relative: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/assets")
        .join(relative);
    if path.exists() {
        return Some(path);
    }
    assert!(
        !assets_required(),
        "CAUSTICA_REQUIRE_ASSETS is set but {} is absent",
        path.display()
    );
    eprintln!(
        "skipping: {} is absent (shared assets not checked out; set CAUSTICA_REQUIRE_ASSETS=1 to make this a failure)",
        path.display()
    );
    None
}

/// The RGB pixels of a frame's layer `name`.
pub fn layer_rgb(frame: &caustica::render::Frame, name: &str) -> Vec<Vec3> {
    let l = frame.aov(name).unwrap_or_else(|| panic!("no layer {name}"));
    (0..l.pixels.len() / 3)
        .map(|i| Vec3::new(l.get(i, 0), l.get(i, 1), l.get(i, 2)))
        .collect()
}

/// A photon-mapped frame's `direct`, `indirect` and `caustic` layers sum to its colour in every
/// pixel (to f32 rounding).
pub fn assert_photon_layers_sum_to_the_colour(f: &caustica::render::Frame) {
    let (d, i, c) = (
        layer_rgb(f, "direct"),
        layer_rgb(f, "indirect"),
        layer_rgb(f, "caustic"),
    );
    for k in 0..f.color.len() {
        let sum = d[k] + i[k] + c[k];
        assert!(
            (sum - f.color[k]).abs().max_element() <= 1e-4 * (1.0 + f.color[k].max_element()),
            "{}: pixel {k}: {sum} against {}",
            f.metadata.device,
            f.color[k]
        );
    }
}

/// A small deterministic generator (64-bit LCG, top 24 bits), so failures repeat.
pub struct LcgRng(pub u64);

impl LcgRng {
    pub fn f32(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }

    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.f32()
    }

    pub fn in_box(&mut self, lo: Vec3, hi: Vec3) -> Vec3 {
        Vec3::new(
            self.range(lo.x, hi.x),
            self.range(lo.y, hi.y),
            self.range(lo.z, hi.z),
        )
    }

    pub fn unit_vector(&mut self) -> Vec3 {
        loop {
            let v = self.in_box(Vec3::splat(-1.0), Vec3::ONE);
            let l = v.length_squared();
            if l > 1e-4 && l <= 1.0 {
                return v / l.sqrt();
            }
        }
    }
}

pub fn material(name: &str, kind: MaterialKind) -> Material {
    Material {
        name: name.into(),
        kind,
        span: Span::NONE,
    }
}

pub fn mesh(name: &str, data: MeshData) -> Mesh {
    Mesh {
        name: name.into(),
        origin: MeshOrigin::Inline,
        data: Arc::new(data),
        displacement: None,
        span: Span::NONE,
    }
}

pub fn instance(mesh: u32, material: u32, transform: Affine3A) -> Instance {
    Instance {
        mesh,
        material,
        transform,
        span: Span::NONE,
    }
}

pub fn light(kind: LightKind) -> Light {
    Light {
        kind,
        span: Span::NONE,
    }
}

/// A diffuse sphere of radius R and albedo ρ with an isotropic point light of power Φ at its
/// centre, seen from inside: every point of the wall receives E = Φ / (4πR²) at normal
/// incidence, so the radiance seen (direct light only) is L = ρ/π · E. Returns the scene and L.
pub fn analytic_sphere_scene() -> (Scene, Vec3) {
    let radius = 2.0;
    let albedo = Vec3::new(0.8, 0.5, 0.25);
    let power = Vec3::new(100.0, 60.0, 30.0);
    let scene = Scene {
        camera: Camera {
            position: Vec3::new(0.3, -0.2, 0.1),
            look_at: Vec3::new(1.0, 0.5, -1.0),
            fov_deg: 60.0,
            ..Default::default()
        },
        film: Film {
            width: 24,
            height: 16,
            spp: 1,
            integrator: caustica::scene::Integrator::Whitted,
            ..Default::default()
        },
        materials: vec![material(
            "wall",
            MaterialKind::Diffuse {
                albedo,
                texture: None,
            },
        )],
        meshes: vec![mesh("sphere", shapes::uv_sphere(radius, 256))],
        instances: vec![instance(0, 0, Affine3A::IDENTITY)],
        lights: vec![light(LightKind::Point {
            position: Vec3::ZERO,
            power,
        })],
        ..Default::default()
    };
    (scene, albedo / PI * power / (4.0 * PI * radius * radius))
}

/// A VD map named "test" over `image`, channels in order, scale 1, midlevel 0.
pub fn vd_map(image: VdImage, space: VdSpace, padding: f32) -> VdMap {
    VdMap {
        space,
        padding,
        ..VdMap::atlas("test", Arc::new(image))
    }
}

/// How far the tessellation of a VD patch at `level` (`2^level × 2^level` cells, each split
/// into the triangles `(v00, v10, v11)` and `(v00, v11, v01)` as `accel::vd_bottom` does) departs
/// from the surface `map.displaced_point` defines, in object units.
///
/// Measured at the midpoints of every cell's four edges and of its diagonal `v00 v11`: the
/// distance between the surface at the midpoint's parameter and the midpoint of the chord. For
/// a surface that is quadratic over a cell, the error of linear interpolation over a triangle
/// is `½ Σ λᵢλⱼ cᵢⱼ` (barycentrics `λ`, one `cᵢⱼ` per edge), which is `cᵢⱼ / 8` at an edge's
/// midpoint and at most `max |c| / 6` inside: the value returned, the largest midpoint error
/// times 4/3, bounds the distance between the tessellation and the surface.
pub fn vd_tessellation_deviation(
    corners: &[Vec3; 4],
    uvs: &[Vec2; 4],
    map: caustica::scene::vdmap::VdSurface,
    level: u32,
) -> f32 {
    let n = (1u32 << level) as f32;
    let at = |i: f32, j: f32| map.displaced_point(corners, uvs, i / n, j / n);
    let chord = |a: (f32, f32), b: (f32, f32)| {
        let mid = at((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0);
        mid.distance((at(a.0, a.1) + at(b.0, b.1)) / 2.0)
    };
    let mut worst = 0.0f32;
    for y in 0..1u32 << level {
        for x in 0..1u32 << level {
            let (x, y) = (x as f32, y as f32);
            let (v00, v10, v11, v01) = ((x, y), (x + 1.0, y), (x + 1.0, y + 1.0), (x, y + 1.0));
            for (a, b) in [(v00, v10), (v10, v11), (v01, v11), (v00, v01), (v00, v11)] {
                worst = worst.max(chord(a, b));
            }
        }
    }
    worst * 4.0 / 3.0
}

/// A Rust struct's WGSL name, size and (member, offset) pairs.
pub type Twin = (&'static str, usize, Vec<(&'static str, usize)>);

/// Asserts that each of `twins` has the size, array stride and member offsets naga gives the
/// WGSL struct of that name in the assembled `kernel_file`.
pub fn assert_wgsl_twins(kernel_file: &str, twins: Vec<Twin>) {
    let source = caustica::gpu::shader::assemble(kernel_file, &[]).unwrap();
    let module = naga::front::wgsl::parse_str(&source).unwrap();
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    for (name, size, fields) in twins {
        let (handle, ty) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no WGSL struct {name}"));
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            panic!("{name} is not a struct");
        };
        assert_eq!(*span as usize, size, "{name}: size");
        assert_eq!(
            layouter[handle].to_stride() as usize,
            size,
            "{name}: stride"
        );
        let wgsl: Vec<(&str, usize)> = members
            .iter()
            .map(|m| (m.name.as_deref().unwrap_or("?"), m.offset as usize))
            .collect();
        assert_eq!(wgsl, fields, "{name}: members");
    }
}

/// A device that counts the frames it renders, and fails from its `fail_from`-th on.
pub struct Watched<'a> {
    inner: &'a dyn caustica::render::Backend,
    calls: std::sync::atomic::AtomicUsize,
    fail_from: usize,
}

impl<'a> Watched<'a> {
    pub fn new(inner: &'a dyn caustica::render::Backend) -> Watched<'a> {
        Watched::failing_from(inner, usize::MAX)
    }
    pub fn failing_from(inner: &'a dyn caustica::render::Backend, fail_from: usize) -> Watched<'a> {
        Watched {
            inner,
            calls: std::sync::atomic::AtomicUsize::new(0),
            fail_from,
        }
    }
    pub fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl caustica::render::Backend for Watched<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn render_frame(
        &self,
        scene: &caustica::scene::Scene,
        prepared: &caustica::accel::Prepared,
        options: &caustica::render::RenderOptions,
    ) -> Result<caustica::render::Frame, caustica::render::RenderError> {
        let call = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if call >= self.fail_from {
            return Err(caustica::render::RenderError::DeviceUnavailable(
                "injected failure: the device was lost".into(),
            ));
        }
        self.inner.render_frame(scene, prepared, options)
    }
}
