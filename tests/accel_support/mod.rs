//! Helpers shared by the accel integration tests: a seeded RNG, scene building, the bunny.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use caustica::accel::{BvhBuilder, BvhLayout, Hit, PrepareOptions, Prepared, Ray};
use caustica::gpu::kernel::Checks;
use caustica::gpu::raybench::{make_ray_sets, measure, MeasureOptions};
use caustica::gpu::GpuContext;
use caustica::io::AssetCache;
use caustica::render::{Backend, Frame};
use caustica::scene::shapes::{box_mesh, grid_quad, uv_sphere};
use caustica::scene::{Instance, Mesh, MeshData, MeshOrigin, Scene, Span, VdMap};
use caustica::SceneFile;
use glam::{Affine3A, Quat, Vec2, Vec3};

/// xorshift64* : reproducible randomness without a dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32) / (1u64 << 24) as f32
    }

    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.next_f32()
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

/// Whether the environment demands the shared assets (`CAUSTICA_REQUIRE_ASSETS=1`, as CI sets
/// it): then a missing asset fails the test instead of skipping it.
fn assets_required() -> bool {
    std::env::var("CAUSTICA_REQUIRE_ASSETS")
        .is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

pub fn assets_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/assets")
}

/// Loads an OBJ of the shared assets as positions and triangles (quads split), or prints why
/// the test is skipped (and fails under `CAUSTICA_REQUIRE_ASSETS=1`).
pub fn load_obj_asset(relative: &str) -> Option<MeshData> {
    let path = assets_dir().join(relative);
    if !path.exists() {
        assert!(
            !assets_required(),
            "CAUSTICA_REQUIRE_ASSETS is set but ../shared/assets/{relative} is absent"
        );
        eprintln!("skipping: ../shared/assets/{relative} not found");
        return None;
    }
    let loaded = caustica::io::load_mesh(&path).expect("the shared OBJ asset parses");
    let mut mesh = MeshData {
        positions: loaded.positions,
        triangles: loaded.triangles,
        ..MeshData::default()
    };
    for q in &loaded.quads {
        mesh.triangles.push([q[0], q[1], q[2]]);
        mesh.triangles.push([q[0], q[2], q[3]]);
    }
    Some(mesh)
}

/// The 16,301-triangle Stanford bunny, if the shared assets are there.
pub fn bunny() -> Option<MeshData> {
    let dir = "meshes/stanford/bunny";
    load_obj_asset(&format!("{dir}/bun_zipper_res2.obj"))
}

pub fn mesh(name: &str, data: MeshData, displacement: Option<u32>) -> Mesh {
    Mesh {
        name: name.into(),
        origin: MeshOrigin::Inline,
        data: Arc::new(data),
        displacement,
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

pub fn scene(meshes: Vec<Mesh>, instances: Vec<Instance>, vdmaps: Vec<VdMap>) -> Scene {
    Scene {
        meshes,
        instances,
        vdmaps,
        ..Default::default()
    }
}

/// A ray from outside the box `(lo, hi)` aimed at a random point inside it.
pub fn ray_from_outside(rng: &mut Rng, lo: Vec3, hi: Vec3) -> Ray {
    let centre = (lo + hi) * 0.5;
    let radius = (hi - lo).length();
    let origin = centre + rng.unit_vector() * radius * 1.5;
    let target = rng.in_box(lo, hi);
    Ray::new(origin, (target - origin) * rng.range(0.1, 3.0))
}

/// A ray starting inside the box `(lo, hi)` in a random direction.
pub fn ray_from_inside(rng: &mut Rng, lo: Vec3, hi: Vec3) -> Ray {
    Ray::new(rng.in_box(lo, hi), rng.unit_vector())
}

/// Checks that the QBVH closest hit equals the brute-force one; returns whether it hit.
pub fn assert_matches_brute_force(prepared: &Prepared, ray: &Ray) -> bool {
    assert_same_hit(
        ray,
        prepared.intersect(ray),
        prepared.intersect_brute_force(ray),
    )
}

/// The accelerated hit `fast` of `ray` is the brute-force hit `slow` (the same primitive, `t`
/// within 1e-4 relative); whether there is one.
pub fn assert_same_hit(ray: &Ray, fast: Option<Hit>, slow: Option<Hit>) -> bool {
    match (fast, slow) {
        (None, None) => false,
        (Some(a), Some(b)) => {
            assert_eq!(
                (a.instance, a.prim),
                (b.instance, b.prim),
                "ray {ray:?}: {a:?} vs {b:?}"
            );
            assert!(
                (a.t - b.t).abs() <= 1e-4 * b.t.abs().max(1e-6),
                "ray {ray:?}: {a:?} vs {b:?}"
            );
            true
        }
        (a, b) => panic!("ray {ray:?}: QBVH {a:?} but brute force {b:?}"),
    }
}

/// A teapot in a stadium: a dense sphere inside a large, sparse room, with a floor of quads, a
/// thin tall box, the dense sphere placed again (rotated and scaled) and two parts of one
/// transform (merged into one grid).
pub fn stadium_scene() -> caustica::scene::Scene {
    let tilted = Affine3A::from_scale_rotation_translation(
        Vec3::new(1.3, 0.7, 1.0),
        Quat::from_rotation_y(0.6) * Quat::from_rotation_x(0.2),
        Vec3::new(2.0, 0.4, -1.0),
    );
    let meshes = vec![
        mesh("room", box_mesh(Vec3::new(40.0, 12.0, 30.0)), None),
        mesh("teapot", uv_sphere(0.25, 64), None),
        mesh("floor", grid_quad(Vec2::new(30.0, 20.0), [12, 9]), None),
        mesh("pole", box_mesh(Vec3::new(0.1, 5.0, 0.1)), None),
        mesh("lid", uv_sphere(0.1, 16), None),
    ];
    let instances = vec![
        instance(0, 0, Affine3A::IDENTITY),
        instance(1, 0, Affine3A::from_translation(Vec3::new(0.0, 0.3, 0.0))),
        instance(2, 0, Affine3A::from_translation(Vec3::new(0.0, -5.0, 0.0))),
        instance(3, 0, tilted),
        instance(4, 0, tilted),
        instance(
            1,
            0,
            Affine3A::from_scale_rotation_translation(
                Vec3::splat(3.0),
                Quat::from_rotation_z(0.4),
                Vec3::new(-6.0, 1.0, 4.0),
            ),
        ),
    ];
    scene(meshes, instances, Vec::new())
}

/// Rays from outside and inside the scene, rays at the dense sphere, rays from 50 and 400 times
/// the sphere's size away, and rays along the axes.
pub fn structure_rays(prepared: &Prepared) -> Vec<Ray> {
    let (lo, hi) = prepared.world_bounds();
    let mut rng = Rng::new(17);
    let mut rays = Vec::new();
    for _ in 0..400 {
        rays.push(ray_from_outside(&mut rng, lo, hi));
        rays.push(ray_from_inside(&mut rng, lo, hi));
    }
    let teapot = Vec3::new(0.0, 0.3, 0.0);
    for _ in 0..400 {
        let target = teapot + rng.unit_vector() * rng.range(0.0, 0.3);
        let origin = teapot + rng.unit_vector() * rng.range(0.5, 5.0);
        rays.push(Ray::new(origin, target - origin));
    }
    for distance in [12.5f32, 100.0] {
        for _ in 0..100 {
            let target = teapot + rng.unit_vector() * rng.range(0.0, 0.25);
            let origin = teapot + rng.unit_vector() * distance;
            rays.push(Ray::new(origin, target - origin));
        }
    }
    for axis in [Vec3::X, Vec3::Y, Vec3::Z, -Vec3::X, -Vec3::Y, -Vec3::Z] {
        for _ in 0..20 {
            rays.push(Ray::new(rng.in_box(lo, hi), axis));
        }
    }
    rays
}

/// A small scene of a floor, a mirror sphere and a box, with position layers: frames of it
/// are compared bit for bit across structures.
pub const SCENE: &str = r#"
camera { position 0 1.2 3  look_at 0 0.3 0  fov 50 }
film   { resolution 40 30 spp 1 sampler independent max_depth 3 }
material clay   { diffuse 0.8 0.7 0.6 }
material chrome { mirror 0.9 0.9 0.9 }
mesh blob  { sphere radius 0.35 segments 24 }
mesh block { box size 0.4 0.4 0.4 }
mesh floor { quad size 4 4 divisions 6 6 }
instance { mesh floor material clay }
instance { mesh blob  material chrome translate -0.4 0.4 0 }
instance { mesh block material clay rotate 0 30 0 translate 0.5 0.2 0.2 }
light point { position 1 2.5 2 power 60 60 60 }
output { path "unused.exr" layers position normal }
"#;

/// A frame's colour and position bits.
pub fn bits(frame: &Frame) -> (Vec<[u32; 3]>, Vec<u32>) {
    let color = frame
        .color
        .iter()
        .map(|c| c.to_array().map(f32::to_bits))
        .collect();
    let p = frame
        .aov("P")
        .unwrap()
        .pixels
        .iter()
        .map(|x| x.to_bits())
        .collect();
    (color, p)
}

/// One frame of `scene` with `backend` over the hierarchy `options` build.
pub fn render(
    backend: &dyn Backend,
    scene: &caustica::scene::Scene,
    options: PrepareOptions,
) -> Frame {
    let prepared = Prepared::build(scene, &options).unwrap();
    backend
        .render_frame(scene, &prepared, &Default::default())
        .unwrap()
}

/// The options of the structure `builder` under `layout`'s top level.
pub fn structure_options(layout: BvhLayout, builder: BvhBuilder) -> PrepareOptions {
    PrepareOptions {
        layout,
        builder,
        ..PrepareOptions::default()
    }
}

/// `--accel NAME` and `qbvh:NAME` name the structure `builder` (flag `flag` in its meshes'
/// records), `film { accel NAME }` too; an analytic sphere and VD patches keep their trees.
pub fn assert_structure_choice(name: &str, builder: BvhBuilder, flag: u32) {
    let (layout, parsed) = caustica::parse_accel(name).unwrap();
    assert_eq!((layout, parsed), (BvhLayout::Wide, builder));
    let (layout, parsed) = caustica::parse_accel(&format!("qbvh:{name}")).unwrap();
    assert_eq!((layout, parsed), (BvhLayout::Qbvh, builder));
    assert!(caustica::describe_accels().contains(&format!("wide:{name}")));
    let text = format!(
        r#"
camera {{ position 0 1 4  look_at 0 0.5 0  fov 40 }}
film {{ resolution 8 8 spp 1 accel {name} }}
material clay {{ diffuse 0.8 0.8 0.8 }}
mesh ball {{ sphere radius 0.5 analytic }}
mesh floor {{ quad size 4 4 divisions 2 2 }}
instance {{ mesh ball material clay translate 0 0.5 0 }}
instance {{ mesh floor material clay }}
light point {{ position 1 3 2 power 50 50 50 }}
"#
    );
    let file = SceneFile::from_str("choice.csc", &text).unwrap();
    let scene =
        caustica::evaluate_frame(&file, 1, &AssetCache::default(), &Default::default()).unwrap();
    assert_eq!(scene.film.accel, Some(BvhLayout::Wide));
    assert_eq!(scene.film.builder, Some(builder));
    let prepared = Prepared::build(&scene, &PrepareOptions::for_scene(&scene)).unwrap();
    let flags: Vec<u32> = prepared.meshes.iter().map(|m| m.flags).collect();
    assert_eq!(flags[0] & flag, 0, "the analytic sphere keeps its tree");
    assert_ne!(flags[1] & flag, 0, "the floor is a {name}");
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let file = caustica::load_scene(&root.join("scenes/vd_patches.csc")).unwrap();
    let scene =
        caustica::evaluate_frame(&file, 1, &AssetCache::default(), &Default::default()).unwrap();
    let prepared = Prepared::build(&scene, &structure_options(BvhLayout::Wide, builder)).unwrap();
    let displaced = caustica::accel::prepared::MESH_DISPLACED;
    assert!(prepared.meshes.iter().any(|m| m.flags & displaced != 0));
    for m in &prepared.meshes {
        assert!(
            m.flags & displaced == 0 || m.flags & flag == 0,
            "VD patches keep a tree"
        );
    }
}

/// Frames of [`SCENE`] with the structure `builder` under either layout's top level render the
/// bits of `default`'s structure on `backend`.
pub fn assert_frames_match_default(
    backend: &dyn Backend,
    default: PrepareOptions,
    builder: BvhBuilder,
) {
    let file = SceneFile::from_str("frames.csc", SCENE).unwrap();
    let scene =
        caustica::evaluate_frame(&file, 1, &AssetCache::default(), &Default::default()).unwrap();
    let reference = render(backend, &scene, default);
    for layout in [BvhLayout::Qbvh, BvhLayout::Wide] {
        let frame = render(backend, &scene, structure_options(layout, builder));
        assert!(
            bits(&frame) == bits(&reference),
            "{}:{}",
            layout.name(),
            builder.name()
        );
    }
}

/// The GPU's closest and any hits of every ray kind through the structure `builder` (flag
/// `flag`) agree with the CPU's on two Cornell boxes, under either layout's top level.
pub fn assert_gpu_traversal_matches_cpu(ctx: &GpuContext, builder: BvhBuilder, flag: u32) {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let assets = AssetCache::default();
    // cornell_mcguire: one OBJ's parts merged into one structure, the top level's one instance.
    for name in ["cornell_spheres.csc", "cornell_mcguire.csc"] {
        let file = caustica::load_scene(&root.join("scenes").join(name)).unwrap();
        let scene = caustica::evaluate_frame(&file, 1, &assets, &Default::default()).unwrap();
        for layout in [BvhLayout::Qbvh, BvhLayout::Wide] {
            let prepared = Prepared::build(&scene, &structure_options(layout, builder)).unwrap();
            assert!(prepared.meshes.iter().any(|m| m.flags & flag != 0));
            let sets = make_ray_sets(&scene, &prepared, 96, 72);
            let rows = measure(
                ctx,
                &scene,
                &prepared,
                &sets,
                MeasureOptions {
                    checks: Checks::Checked,
                    runs: 1,
                    with_vd_code: false,
                    check_every: 1,
                    defines: &[],
                    fused: false,
                },
            )
            .unwrap();
            assert_eq!(rows.len(), 4, "{name}: every ray kind is measured");
            for r in rows {
                assert!(r.rays > 0);
                // As tests/gpu_raybench.rs: a hardware GPU may fuse multiply-adds in the
                // triangle test and flip a ray at a shared edge; lavapipe agrees on every ray.
                let bar = if r.kind == "primary" { 0.999 } else { 0.99 };
                assert!(
                    r.agreement >= bar,
                    "{name} {}:{} {}: GPU and CPU agree on only {}",
                    layout.name(),
                    builder.name(),
                    r.kind,
                    r.agreement
                );
            }
        }
    }
}

/// Closest hits through the structure `options` picks, on 1600 camera rays at the bunny (scaled
/// by 10), equal brute force; at least 400 of them hit. Skips (returns) without the asset.
pub fn assert_bunny_camera_rays_match_brute_force(options: &PrepareOptions) {
    let Some(bunny) = bunny() else {
        return;
    };
    let scene = scene(
        vec![mesh("bunny", bunny, None)],
        vec![instance(0, 0, Affine3A::from_scale(Vec3::splat(10.0)))],
        Vec::new(),
    );
    let prepared = Prepared::build(&scene, options).unwrap();
    let (lo, hi) = prepared.world_bounds();
    let eye = (lo + hi) * 0.5 + Vec3::new(0.2, 0.5, 2.5) * (hi - lo).length();
    let mut hits = 0;
    for y in 0..40 {
        for x in 0..40 {
            let target = lo + (hi - lo) * Vec3::new(x as f32 / 39.0, y as f32 / 39.0, 0.5);
            let ray = Ray::new(eye, target - eye);
            hits += assert_matches_brute_force(&prepared, &ray) as usize;
        }
    }
    assert!(hits > 400, "{hits} of 1600 camera rays hit the bunny");
}
