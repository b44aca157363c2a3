//! The GPU Whitted pipeline agrees with its CPU twin: camera-ray hits pixel by pixel, colours
//! and AOVs image by image on every example scene, and the analytic sphere of render_whitted.rs.

mod support;

use support::analytic_sphere_scene;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use glam::Vec3;

use caustica::accel::{PrepareOptions, Prepared};
use caustica::cpu::{render_whitted, Tracer};
use caustica::gpu::kernel::Checks;
use caustica::gpu::test_context;
use caustica::gpu::GpuBackend;
use caustica::io::AssetCache;
use caustica::render::{Backend, Frame, RenderOptions};
use caustica::scene::{Aov, FresnelMode, MaterialKind, Scene};
use caustica::Overrides;

fn example_scenes() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let mut scenes: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csc"))
        .filter(|p| !p.file_name().unwrap().to_string_lossy().contains("walls"))
        .collect();
    scenes.sort();
    scenes
}

/// The surface layers the image comparisons check. The photon debug layers (a kNN query at every
/// pixel, which on lavapipe costs far more than the frame) are compared in
/// `tests/frame_passes.rs` on a small image.
const SURFACE_LAYERS: [Aov; 5] = [Aov::Albedo, Aov::Normal, Aov::Depth, Aov::Position, Aov::Id];

/// The first frame of an example scene at 320×240, 1 spp, with the surface layers requested.
///
/// On hardware GPUs the shader compiler may fuse multiplies and adds where the CPU rounds twice,
/// so a ray that meets the shared edge of two faces can pick the other face. In the symmetric
/// Cornell box the corner lines run through pixel centres, so such pixels line up along them; their
/// share falls with the resolution (edges are lines). Lavapipe agrees exactly.
fn small_scene(path: &std::path::Path) -> (String, Scene, Prepared) {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let file = caustica::load_scene(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let first = file.frame_range().unwrap().first;
    let overrides = Overrides {
        resolution: Some((320, 240)),
        spp: Some(1),
        integrator: Some(caustica::scene::Integrator::Whitted),
        ..Overrides::default()
    };
    let mut scene = caustica::evaluate_frame(&file, first, &AssetCache::default(), &overrides)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    scene.output.layers = SURFACE_LAYERS.to_vec();
    let prepared = caustica::prepare(&scene).unwrap_or_else(|e| panic!("{name}: {e}"));
    (name, scene, prepared)
}

/// Fraction of pixels whose GPU (instance, prim) equals the CPU's `primary_hit_id`.
fn id_agreement(gpu: &[[f32; 2]], scene: &Scene, prepared: &Prepared) -> f64 {
    let tracer = Tracer::new(scene, prepared);
    let w = scene.film.width;
    let (mut same, mut different) = (0, 0);
    for (i, id) in gpu.iter().enumerate() {
        let (x, y) = (i as u32 % w, i as u32 / w);
        let cpu = tracer.primary_hit_id(x, y);
        if cpu == *id {
            same += 1;
        } else {
            different += 1;
            if different <= 8 {
                // Name the first few disagreements, to see where they are.
                eprintln!("  pixel ({x}, {y}): CPU (instance, prim) {cpu:?}, GPU {id:?}");
            }
        }
    }
    same as f64 / gpu.len() as f64
}

#[test]
fn gpu_camera_ray_hits_equal_the_cpu_ids_on_every_example_scene() {
    let Some(ctx) = test_context() else { return };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    for path in example_scenes() {
        let (name, scene, prepared) = small_scene(&path);
        let ids = backend.primary_hit_ids(&scene, &prepared).unwrap();
        let agreement = id_agreement(&ids, &scene, &prepared);
        eprintln!("{name}: {:.4}% of primary hits agree", agreement * 100.0);
        assert!(agreement >= 0.999, "{name}: only {agreement} agree");
        assert!(ids.iter().any(|id| id[0] >= 0.0), "{name}: nothing was hit");
    }
}

/// The unchecked trace kernel finds the same hits as the checked one (and the CPU).
#[test]
fn unchecked_trace_kernel_finds_the_same_hits_as_the_checked_one() {
    let Some(ctx) = test_context() else { return };
    let ctx = Arc::new(ctx);
    let checked = GpuBackend::new(ctx.clone()).unwrap();
    let unchecked = GpuBackend::with_trace_checks(ctx, Checks::Unchecked).unwrap();
    let path = example_scenes()
        .into_iter()
        .find(|p| p.ends_with("bunny.csc"))
        .unwrap();
    let (name, scene, prepared) = small_scene(&path);
    // The first run of each pipeline includes the driver's compilation: warm both up, then
    // time five runs each (upload, camera rays, trace, readback).
    let a = checked.primary_hit_ids(&scene, &prepared).unwrap();
    let b = unchecked.primary_hit_ids(&scene, &prepared).unwrap();
    let time = |backend: &GpuBackend| {
        let start = Instant::now();
        for _ in 0..5 {
            backend.primary_hit_ids(&scene, &prepared).unwrap();
        }
        start.elapsed().as_secs_f64() * 1e3 / 5.0
    };
    let (checked_ms, unchecked_ms) = (time(&checked), time(&unchecked));
    eprintln!("{name} camera rays: checked {checked_ms:.1} ms, unchecked {unchecked_ms:.1} ms");
    assert_eq!(a, b);
    assert!(id_agreement(&b, &scene, &prepared) >= 0.999);
}

/// Σ|gpu − cpu| / Σ|cpu| over every pixel and channel.
fn relative_l1(gpu: &[Vec3], cpu: &[Vec3]) -> f64 {
    let mut diff = 0.0f64;
    let mut total = 0.0f64;
    for (g, c) in gpu.iter().zip(cpu) {
        diff += (*g - *c).abs().element_sum() as f64;
        total += c.abs().element_sum() as f64;
    }
    diff / total.max(1e-12)
}

fn layer_vec3(frame: &Frame, name: &str) -> Vec<Vec3> {
    let layer = frame.aov(name).unwrap();
    layer
        .pixels
        .chunks_exact(3)
        .map(|c| Vec3::new(c[0], c[1], c[2]))
        .collect()
}

#[test]
fn gpu_images_match_the_cpu_within_one_percent_on_every_example_scene() {
    let Some(ctx) = test_context() else { return };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    for path in example_scenes() {
        let (name, scene, prepared) = small_scene(&path);
        let cpu = render_whitted(&scene, &prepared, &RenderOptions::default());
        let start = Instant::now();
        let gpu = backend
            .render_frame(&scene, &prepared, &RenderOptions::default())
            .unwrap();
        let seconds = start.elapsed().as_secs_f64();
        let colour = relative_l1(&gpu.color, &cpu.color);
        let albedo = relative_l1(&layer_vec3(&gpu, "Albedo"), &layer_vec3(&cpu, "Albedo"));
        let normal = relative_l1(&layer_vec3(&gpu, "Ns"), &layer_vec3(&cpu, "Ns"));
        let geometric = relative_l1(&layer_vec3(&gpu, "N"), &layer_vec3(&cpu, "N"));
        let position = relative_l1(&layer_vec3(&gpu, "P"), &layer_vec3(&cpu, "P"));
        let alpha = relative_l1(
            &gpu.alpha
                .iter()
                .map(|&a| Vec3::splat(a))
                .collect::<Vec<_>>(),
            &cpu.alpha
                .iter()
                .map(|&a| Vec3::splat(a))
                .collect::<Vec<_>>(),
        );
        let depth_g = &gpu.aov(caustica::render::DEPTH_LAYER).unwrap().pixels;
        let depth_c = &cpu.aov(caustica::render::DEPTH_LAYER).unwrap().pixels;
        let depth_agree = depth_g
            .iter()
            .zip(depth_c)
            .filter(|(g, c)| g == c || (*g - *c).abs() <= 1e-4 * c.abs())
            .count() as f64
            / depth_c.len() as f64;
        let ids_agree = gpu
            .aov("id")
            .unwrap()
            .pixels
            .chunks_exact(2)
            .zip(cpu.aov("id").unwrap().pixels.chunks_exact(2))
            .filter(|(g, c)| g == c)
            .count() as f64
            / (depth_c.len() as f64);
        eprintln!(
            "{name}: colour {:.4}%, albedo {:.4}%, normal {:.4}%, depth {:.2}% equal, id {:.2}% equal, {:.2} s on {}",
            colour * 100.0,
            albedo * 100.0,
            normal * 100.0,
            depth_agree * 100.0,
            ids_agree * 100.0,
            seconds,
            gpu.metadata.device
        );
        eprintln!("  {:?}", gpu.metadata.stats);
        assert!(colour < 0.01, "{name}: colour differs by {colour}");
        assert!(albedo < 0.01, "{name}: albedo differs by {albedo}");
        assert!(normal < 0.01, "{name}: normal differs by {normal}");
        assert!(geometric < 0.01, "{name}: N differs by {geometric}");
        assert!(position < 0.01, "{name}: P differs by {position}");
        assert!(alpha < 0.01, "{name}: alpha differs by {alpha}");
        assert!(
            depth_agree >= 0.999,
            "{name}: depth agrees on {depth_agree}"
        );
        assert!(ids_agree >= 0.999, "{name}: ids agree on {ids_agree}");
        let value = |f: &Frame, stat: &str| f.metadata.stat(stat).unwrap();
        assert_eq!(
            value(&gpu, "rays/primary"),
            value(&cpu, "rays/primary"),
            "{name}"
        );
        // Secondary rays follow the first hits, which may differ on the few edge pixels above.
        for stat in ["rays/shadow", "rays/specular"] {
            let (g, c) = (value(&gpu, stat), value(&cpu, stat));
            assert!(
                (g - c).abs() <= 1e-3 * c.max(1.0),
                "{name}: {stat}: GPU {g}, CPU {c}"
            );
        }
        assert!(!gpu.metadata.device.is_empty());
    }
}

/// The analytic sphere of tests/render_whitted.rs through the GPU backend: L = ρ/π · Φ/(4πR²).
#[test]
fn gpu_diffuse_sphere_lit_from_its_centre_has_the_radiance_computed_by_hand() {
    let Some(ctx) = test_context() else { return };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    let (scene, expected) = analytic_sphere_scene();
    let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let frame = backend
        .render_frame(&scene, &prepared, &RenderOptions::default())
        .unwrap();
    for (i, c) in frame.color.iter().enumerate() {
        let rel = ((*c - expected) / expected).abs().max_element();
        assert!(
            rel < 2e-3,
            "pixel {i}: {c} vs {expected} (relative error {rel})"
        );
    }
}

/// A frame large enough that the shade stage runs in several chunks (its shadow rays exceed one
/// storage binding on a 128 MiB device) still matches the CPU (about 5 s on lavapipe).
#[test]
fn chunked_shading_of_a_larger_frame_matches_the_cpu() {
    let Some(ctx) = test_context() else { return };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    let path = example_scenes()
        .into_iter()
        .find(|p| p.ends_with("cornell_spheres.csc"))
        .unwrap();
    let file = caustica::load_scene(&path).unwrap();
    let overrides = Overrides {
        resolution: Some((256, 256)),
        spp: Some(4),
        integrator: Some(caustica::scene::Integrator::Whitted),
        ..Overrides::default()
    };
    let scene = caustica::evaluate_frame(&file, 0, &AssetCache::default(), &overrides).unwrap();
    let prepared = caustica::prepare(&scene).unwrap();
    let start = Instant::now();
    let cpu = render_whitted(&scene, &prepared, &RenderOptions::default());
    let cpu_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let gpu = backend
        .render_frame(&scene, &prepared, &RenderOptions::default())
        .unwrap();
    let gpu_s = start.elapsed().as_secs_f64();
    let colour = relative_l1(&gpu.color, &cpu.color);
    eprintln!(
        "cornell_spheres 256x256x4: colour {:.4}%, cpu {cpu_s:.2} s, gpu {gpu_s:.2} s\n  {:?}",
        colour * 100.0,
        gpu.metadata.stats
    );
    assert!(colour < 0.01, "colour differs by {colour}");
}

/// An array larger than one storage binding is refused with an error that names it.
#[test]
fn an_array_over_the_binding_limit_is_refused_with_its_name() {
    let Some(ctx) = test_context() else { return };
    let limit = ctx
        .info
        .max_storage_buffer_binding_size
        .min(ctx.info.max_buffer_size);
    let too_many = vec![[0.0f32; 4]; (limit / 16 + 1) as usize];
    let err = caustica::gpu::upload::upload_array(&ctx, "positions", &too_many)
        .expect_err("an array over the limit is refused");
    let message = err.to_string();
    assert!(
        message.contains("positions") && message.contains(&limit.to_string()),
        "{message}"
    );
}

/// The stats figure `name` of a frame.
fn stat(frame: &Frame, name: &str) -> f64 {
    frame
        .metadata
        .stat(name)
        .unwrap_or_else(|| panic!("no stat {name}"))
}

/// The colour's and the layers' bits.
fn frame_bits(frame: &Frame) -> Vec<u32> {
    frame
        .color
        .iter()
        .flat_map(|c| c.to_array())
        .chain(frame.aovs.iter().flat_map(|l| l.pixels.iter().copied()))
        .map(f32::to_bits)
        .collect()
}

/// `cornell_spheres.csc` (mirror and glass spheres, glass up to the scene's depth) at 96×72 with
/// the albedo and depth layers.
fn small_cornell_spheres() -> (Scene, Prepared) {
    let path = example_scenes()
        .into_iter()
        .find(|p| p.ends_with("cornell_spheres.csc"))
        .unwrap();
    let (_, mut scene, prepared) = small_scene(&path);
    scene.film.width = 96;
    scene.film.height = 72;
    scene.output.layers = vec![Aov::Albedo, Aov::Depth];
    (scene, prepared)
}

/// The devices of one render share the shade trees' sizes (`gpu::backend::FrameHistory`): a
/// device's first frame takes its levels' room from the frame another device rendered, waits for
/// no level, and gives the same image.
#[test]
fn a_devices_first_frame_takes_the_shade_tree_sizes_another_device_of_the_render_measured() {
    let (Some(a), Some(b)) = (test_context(), test_context()) else {
        return;
    };
    let history = caustica::gpu::backend::FrameHistory::default();
    let first_device = GpuBackend::new(Arc::new(a)).unwrap().sharing(&history);
    let second_device = GpuBackend::new(Arc::new(b)).unwrap().sharing(&history);
    let (scene, prepared) = small_cornell_spheres();
    let first = first_device
        .render(&scene, &prepared, &Default::default())
        .unwrap();
    let second = second_device
        .render(&scene, &prepared, &Default::default())
        .unwrap();
    assert_eq!(stat(&first, "shade_tree/sized_passes"), 0.0);
    assert_eq!(stat(&second, "shade_tree/sized_passes"), 1.0);
    assert_eq!(stat(&second, "shade_tree/retries"), 0.0);
    assert!(
        frame_bits(&first) == frame_bits(&second),
        "the two devices' frames differ"
    );
}

/// The shade trees are built by scans and summed without atomics, so two renders of a scene with
/// mirrors, dielectrics and a sampled quad light are equal bit for bit, colour and every layer.
/// The second takes its shade-tree levels' room from the first's counts and records the levels
/// without waiting for any count: the same nodes, fewer waits for the device, and no frame
/// rendered again.
#[test]
fn gpu_renders_are_the_same_bit_for_bit_run_after_run_the_second_waiting_for_no_level() {
    let Some(ctx) = test_context() else { return };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    let (mut scene, prepared) = small_cornell_spheres();
    scene.output.layers = Aov::ALL.to_vec();
    // Fewer photons than the scene's: the photon layers' kNN queries are most of the frame on
    // lavapipe, and two renders agree bit for bit or not whatever the count.
    scene.photons.global = 20_000;
    scene.photons.caustic = 10_000;
    let first = backend
        .render(&scene, &prepared, &Default::default())
        .unwrap();
    let second = backend
        .render(&scene, &prepared, &Default::default())
        .unwrap();
    assert!(first.color.iter().any(|c| c.max_element() > 0.0));
    assert!(
        frame_bits(&first) == frame_bits(&second),
        "two renders differ"
    );
    assert_eq!(stat(&first, "shade_tree/sized_passes"), 0.0);
    assert_eq!(stat(&second, "shade_tree/sized_passes"), 1.0);
    assert_eq!(stat(&second, "shade_tree/retries"), 0.0);
    assert_eq!(
        stat(&first, "shade_tree/nodes"),
        stat(&second, "shade_tree/nodes")
    );
    assert!(
        stat(&second, "host/waits") < stat(&first, "host/waits"),
        "waits: {} sized, {} reading each level's count",
        stat(&second, "host/waits"),
        stat(&first, "host/waits")
    );
}

/// When a level outgrows the room the last frame's counts gave it (the last frame had no mirror
/// or glass, so no level past the camera's), the frame is rendered again with each level's count
/// read as it comes: bit for bit what a fresh backend renders.
#[test]
fn a_shade_tree_level_that_outgrows_the_last_frames_room_is_rendered_again() {
    let Some(ctx) = test_context() else { return };
    let ctx = Arc::new(ctx);
    let backend = GpuBackend::new(ctx.clone()).unwrap();
    let (scene, prepared) = small_cornell_spheres();
    let mut matte = scene.clone();
    for m in &mut matte.materials {
        if !matches!(
            m.kind,
            MaterialKind::Diffuse { .. } | MaterialKind::Emissive { .. }
        ) {
            m.kind = MaterialKind::Diffuse {
                albedo: Vec3::splat(0.5),
                texture: None,
            };
        }
    }
    let matte_prepared = caustica::prepare(&matte).unwrap();
    let flat = backend
        .render(&matte, &matte_prepared, &Default::default())
        .unwrap();
    assert_eq!(
        stat(&flat, "shade_tree/nodes"),
        (scene.film.width * scene.film.height) as f64,
        "the matte scene's trees are the camera level alone"
    );
    let retried = backend
        .render(&scene, &prepared, &Default::default())
        .unwrap();
    assert_eq!(stat(&retried, "shade_tree/retries"), 1.0);
    assert_eq!(stat(&retried, "shade_tree/sized_passes"), 0.0);
    let fresh = GpuBackend::new(ctx)
        .unwrap()
        .render(&scene, &prepared, &Default::default())
        .unwrap();
    assert!(stat(&fresh, "shade_tree/nodes") > stat(&flat, "shade_tree/nodes"));
    assert_eq!(stat(&fresh, "shade_tree/retries"), 0.0);
    assert!(frame_bits(&retried) == frame_bits(&fresh));
}

/// The Cornell box with a gold conductor, an exact-Fresnel glass and a Schlick glass sphere at
/// 64×64: the GPU image matches the CPU's, and switching every dielectric between the exact
/// equations and Schlick's approximation changes both backends' images in the same way (so the
/// material's Fresnel flag reaches the shade kernel and its formula is the CPU's).
#[test]
fn gpu_conductor_and_exact_and_schlick_glass_match_the_cpu() {
    let Some(ctx) = test_context() else { return };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    let path = example_scenes()
        .into_iter()
        .find(|p| p.ends_with("cornell_metals.csc"))
        .unwrap();
    let file = caustica::load_scene(&path).unwrap();
    let overrides = Overrides {
        resolution: Some((64, 64)),
        spp: Some(1),
        integrator: Some(caustica::scene::Integrator::Whitted),
        ..Overrides::default()
    };
    let scene = caustica::evaluate_frame(&file, 0, &AssetCache::default(), &overrides).unwrap();
    let kinds: Vec<&MaterialKind> = scene.materials.iter().map(|m| &m.kind).collect();
    assert!(kinds
        .iter()
        .any(|k| matches!(k, MaterialKind::Conductor { .. })));
    let with_fresnel = |mode: FresnelMode| {
        let mut s = scene.clone();
        for m in &mut s.materials {
            if let MaterialKind::Dielectric { fresnel, .. } = &mut m.kind {
                *fresnel = mode;
            }
        }
        s
    };
    let prepared = caustica::prepare(&scene).unwrap();
    let mut images = Vec::new();
    for mode in [FresnelMode::Exact, FresnelMode::Schlick] {
        let s = with_fresnel(mode);
        let cpu = render_whitted(&s, &prepared, &RenderOptions::default());
        let gpu = backend
            .render_frame(&s, &prepared, &RenderOptions::default())
            .unwrap();
        let colour = relative_l1(&gpu.color, &cpu.color);
        let albedo = relative_l1(&layer_vec3(&gpu, "Albedo"), &layer_vec3(&cpu, "Albedo"));
        eprintln!(
            "{mode:?}: colour {:.5}%, albedo {:.5}%",
            colour * 100.0,
            albedo * 100.0
        );
        assert!(colour < 0.01, "{mode:?}: colour differs by {colour}");
        assert!(albedo < 0.01, "{mode:?}: albedo differs by {albedo}");
        images.push((cpu.color, gpu.color));
    }
    let difference =
        |a: &[Vec3], b: &[Vec3]| -> Vec<Vec3> { a.iter().zip(b).map(|(x, y)| *x - *y).collect() };
    let cpu_change = difference(&images[0].0, &images[1].0);
    let gpu_change = difference(&images[0].1, &images[1].1);
    let changed = cpu_change
        .iter()
        .filter(|c| c.abs().max_element() > 1e-4)
        .count();
    let mismatch = relative_l1(&gpu_change, &cpu_change);
    eprintln!(
        "exact − Schlick: {changed} pixels change on the CPU, GPU change differs by {:.3}%",
        mismatch * 100.0
    );
    assert!(
        changed > 20,
        "only {changed} pixels change with the Fresnel formula"
    );
    // Both changes come from the same rays on both backends; they agree up to rounding.
    assert!(
        mismatch < 0.02,
        "the GPU's change differs from the CPU's by {mismatch}"
    );
}

/// A textured quad whose texture is scaled and offset (`texture { scale offset }`) and whose
/// UVs repeat (`quad { repeat }`): the GPU's lookups are the CPU's.
#[test]
fn gpu_texture_lookups_through_uv_scale_offset_and_repeats_match_the_cpu() {
    use caustica::scene::{shapes, Camera, Film, LightKind, Texture, TextureImage};
    use glam::{Affine3A, Vec2};
    let Some(ctx) = test_context() else { return };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    // A 4×4 checker of two colours with a red texel, so that any shift or scale shows.
    let mut texels: Vec<Vec3> = (0..16)
        .map(|i| {
            if (i % 4 + i / 4) % 2 == 0 {
                Vec3::splat(0.9)
            } else {
                Vec3::splat(0.2)
            }
        })
        .collect();
    texels[5] = Vec3::new(0.9, 0.1, 0.1);
    let mut quad = shapes::grid_quad(Vec2::splat(2.0), [1, 1]);
    for uv in &mut quad.uvs {
        *uv *= Vec2::new(2.0, 3.0);
    }
    let scene = Scene {
        camera: Camera {
            position: Vec3::new(0.0, 2.0, 0.01),
            look_at: Vec3::ZERO,
            fov_deg: 50.0,
            ..Default::default()
        },
        film: Film {
            width: 64,
            height: 64,
            spp: 1,
            integrator: caustica::scene::Integrator::Whitted,
            ..Default::default()
        },
        textures: vec![Texture {
            name: "checker".into(),
            path: "checker.png".into(),
            image: Arc::new(TextureImage {
                width: 4,
                height: 4,
                texels,
            }),
            uv_scale: Vec2::new(1.5, 0.75),
            uv_offset: Vec2::new(0.3, -0.2),
            span: Default::default(),
        }],
        materials: vec![caustica::scene::Material {
            name: "checker".into(),
            kind: MaterialKind::Diffuse {
                albedo: Vec3::ONE,
                texture: Some(0),
            },
            span: Default::default(),
        }],
        meshes: vec![caustica::scene::Mesh {
            name: "floor".into(),
            origin: caustica::scene::MeshOrigin::Quad,
            data: Arc::new(quad),
            displacement: None,
            span: Default::default(),
        }],
        instances: vec![caustica::scene::Instance {
            mesh: 0,
            material: 0,
            transform: Affine3A::IDENTITY,
            span: Default::default(),
        }],
        lights: vec![caustica::scene::Light {
            kind: LightKind::Directional {
                direction: Vec3::NEG_Y,
                irradiance: Vec3::splat(3.0),
                angle_deg: 0.0,
            },
            span: Default::default(),
        }],
        ..Default::default()
    };
    let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let cpu = render_whitted(&scene, &prepared, &RenderOptions::default());
    let gpu = backend
        .render_frame(&scene, &prepared, &RenderOptions::default())
        .unwrap();
    let colour = relative_l1(&gpu.color, &cpu.color);
    assert!(colour < 1e-4, "colour differs by {colour}");
    // The transform is in effect: the texture's own UVs would show other colours.
    let mut plain = scene.clone();
    plain.textures[0].uv_scale = Vec2::ONE;
    plain.textures[0].uv_offset = Vec2::ZERO;
    let untransformed = render_whitted(&plain, &prepared, &RenderOptions::default());
    assert!(relative_l1(&untransformed.color, &cpu.color) > 0.05);
}
