//! End-to-end animation through the library: `scenes/animated.csc` rendered for several frames
//! with `render_animation`, and its animated values checked against the formulas in the file.

mod support;

use std::f32::consts::PI;
use std::path::PathBuf;

use caustica::io::AssetCache;
use caustica::scene::LightKind;
use caustica::{Device, Overrides, RenderJob};
use glam::Vec3;

fn animated_scene() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenes/animated.csc")
}

/// What `scenes/animated.csc` says, for `frame` of `frames 1..24 fps 24`:
/// `t = time = (frame - 1) / 24`, `angle = 2 * pi * t`.
fn angle_of(frame: i64) -> f32 {
    2.0 * PI * ((frame - 1) as f32 / 24.0)
}

/// `light point { position (2 * cos(angle)) 2.5 (2 * sin(angle)) ... }`
fn expected_light_position(frame: i64) -> Vec3 {
    let angle = angle_of(frame);
    Vec3::new(2.0 * angle.cos(), 2.5, 2.0 * angle.sin())
}

#[test]
fn rendering_frames_1_to_3_writes_three_different_exrs_with_frame_and_time_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let pattern = dir.path().join("anim_####.exr");
    let job = RenderJob {
        frames: Some(vec![1, 2, 3]),
        overrides: Overrides {
            resolution: Some((48, 36)),
            spp: Some(1),
            seed: None,
            output: Some(pattern.to_str().unwrap().to_string()),
            ..Default::default()
        },
        ..RenderJob::new(animated_scene(), Device::Cpu)
    };
    let mut seen = Vec::new();
    let reports = caustica::render_animation(&job, |report| seen.push(report.frame)).unwrap();
    assert_eq!(
        seen,
        [1, 2, 3],
        "on_frame is called once per frame, in order"
    );
    assert_eq!(
        reports.iter().map(|r| r.frame).collect::<Vec<_>>(),
        [1, 2, 3]
    );

    let expected: Vec<PathBuf> = (1..=3)
        .map(|f| dir.path().join(format!("anim_{f:04}.exr")))
        .collect();
    for (report, path) in reports.iter().zip(&expected) {
        assert_eq!(&report.exr, path);
        assert!(report.preview.is_none());
        assert!(!report.stats.is_empty());
    }
    let mut on_disk: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, expected, "exactly the three frames, nothing else");

    let frames: Vec<_> = expected
        .iter()
        .map(|p| caustica::io::read_frame(p).unwrap())
        .collect();
    for (i, frame) in frames.iter().enumerate() {
        let number = i as i64 + 1;
        assert_eq!((frame.width, frame.height), (48, 36));
        assert_eq!(frame.metadata.frame, number);
        let expected_time = i as f32 / 24.0;
        assert!(
            (frame.metadata.time - expected_time).abs() < 1e-6,
            "frame {number}: time {} instead of {expected_time}",
            frame.metadata.time
        );
        assert_eq!(frame.metadata.spp, 1);
        assert_eq!(frame.metadata.device, "cpu");
        // `output { ... layers albedo depth }`
        let names: Vec<&str> = frame.aovs.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["Albedo", caustica::render::DEPTH_LAYER]);
        assert!(frame
            .color
            .iter()
            .all(|c| c.is_finite() && c.min_element() >= 0.0));
        assert!(
            frame.color.iter().any(|c| c.max_element() > 0.0),
            "frame {number} is black"
        );
    }
    for a in 0..3 {
        for b in a + 1..3 {
            assert_ne!(
                frames[a].color,
                frames[b].color,
                "frames {} and {} have the same colour",
                a + 1,
                b + 1
            );
        }
    }
}

#[test]
fn the_light_circles_and_the_red_ball_moves_as_the_scene_formulas_say() {
    let file = caustica::load_scene(&animated_scene()).unwrap();
    let range = file.frame_range().unwrap();
    assert_eq!((range.first, range.last, range.fps), (1, 24, 24.0));
    let assets = AssetCache::default();
    let mut positions = Vec::new();
    for frame in [1, 7, 13] {
        let scene = caustica::evaluate_frame(&file, frame, &assets, &Overrides::default()).unwrap();
        assert_eq!(scene.frame, frame);
        assert!((scene.time - (frame - 1) as f32 / 24.0).abs() < 1e-6);
        assert_eq!(scene.lights.len(), 1);
        let LightKind::Point { position, power } = scene.lights[0].kind else {
            panic!("the light is not a point light: {:?}", scene.lights[0]);
        };
        assert_eq!(power, Vec3::new(120.0, 110.0, 100.0));
        let expected = expected_light_position(frame);
        assert!(
            (position - expected).abs().max_element() < 1e-4,
            "frame {frame}: light at {position}, expected {expected}"
        );
        // `instance { mesh ball material red scale 0.4 translate (0.6 * sin(angle)) 0.18 1.0 }`
        let ball = &scene.instances[3];
        let expected_ball = Vec3::new(0.6 * angle_of(frame).sin(), 0.18, 1.0);
        let moved = Vec3::from(ball.transform.translation);
        assert!(
            (moved - expected_ball).abs().max_element() < 1e-4,
            "frame {frame}: red ball at {moved}, expected {expected_ball}"
        );
        positions.push(position);
    }
    // Frame 1 (t = 0): on +x; frame 7 (a quarter turn): on +z; frame 13 (half a turn): on -x.
    assert!((positions[0] - Vec3::new(2.0, 2.5, 0.0)).length() < 1e-4);
    assert!((positions[1] - Vec3::new(0.0, 2.5, 2.0)).length() < 1e-4);
    assert!((positions[2] - Vec3::new(-2.0, 2.5, 0.0)).length() < 1e-4);
    assert!(
        (positions[2] - positions[0]).length() > 3.9,
        "the light moved across the circle"
    );
}

#[test]
fn render_animation_without_a_frame_range_renders_the_scenes_whole_range() {
    // A two-frame scene written for the test: with `frames: None` the job renders the file's
    // `frames` range, and frame numbers start from its first frame.
    let dir = tempfile::tempdir().unwrap();
    let scene_path = dir.path().join("two.csc");
    std::fs::write(
        &scene_path,
        "camera { position 0 1 4  look_at 0 0 0  fov 40 }
material white { diffuse 0.7 0.7 0.7 }
mesh floor { quad size 4 4 }
instance { mesh floor material white }
light point { position (frame - 5) 2 0 power 50 50 50 }
frames 5..6 fps 10
",
    )
    .unwrap();
    let job = RenderJob {
        frames: None,
        overrides: Overrides {
            resolution: Some((8, 8)),
            spp: Some(1),
            seed: None,
            output: Some(dir.path().join("f##.exr").to_str().unwrap().to_string()),
            ..Default::default()
        },
        ..RenderJob::new(scene_path, Device::Cpu)
    };
    let reports = caustica::render_animation(&job, |_| {}).unwrap();
    assert_eq!(reports.iter().map(|r| r.frame).collect::<Vec<_>>(), [5, 6]);
    let six = caustica::io::read_frame(&dir.path().join("f06.exr")).unwrap();
    assert_eq!(six.metadata.frame, 6);
    assert!((six.metadata.time - 0.1).abs() < 1e-6);
    assert!(dir.path().join("f05.exr").is_file());
}

/// Frames 2..n of an animation that one GPU backend renders in a row (its kernels and the
/// buffers it keeps carried from frame to frame) are bit for bit the frames that a backend on a
/// freshly opened device renders alone, Whitted and photon-mapped, with AOVs.
#[test]
fn gpu_frames_after_the_first_equal_the_same_frames_from_a_fresh_backend_bit_for_bit() {
    use caustica::gpu::GpuBackend;
    use caustica::render::Backend;
    let Some(ctx) = caustica::gpu::test_context() else {
        return;
    };
    let ctx = std::sync::Arc::new(ctx);
    let file = caustica::load_scene(&animated_scene()).unwrap();
    let assets = AssetCache::default();
    for integrator in [
        caustica::scene::Integrator::Whitted,
        caustica::scene::Integrator::PhotonMap,
    ] {
        let overrides = Overrides {
            resolution: Some((40, 30)),
            spp: Some(2),
            integrator: Some(integrator),
            layers: Some(vec![
                caustica::scene::Aov::Albedo,
                caustica::scene::Aov::Depth,
            ]),
            ..Default::default()
        };
        // The backend that renders frames in a row also keeps the meshes' middle levels.
        let meshes = caustica::accel::MeshBuildCache::default();
        let frame = |n: i64, cache: Option<&caustica::accel::MeshBuildCache>| {
            let mut scene = caustica::evaluate_frame(&file, n, &assets, &overrides).unwrap();
            scene.photons.global = 20_000;
            scene.photons.caustic = 20_000;
            scene.gather.seeds = 128;
            scene.gather.rays = 16;
            let prepared = match cache {
                Some(cache) => caustica::prepare_cached(&scene, cache).unwrap(),
                None => caustica::prepare(&scene).unwrap(),
            };
            (scene, prepared)
        };
        let running = GpuBackend::new(ctx.clone()).unwrap();
        let mut in_a_row = Vec::new();
        for n in 1..=3 {
            let (scene, prepared) = frame(n, Some(&meshes));
            in_a_row.push(
                running
                    .render_frame(&scene, &prepared, &Default::default())
                    .unwrap(),
            );
        }
        for n in 2..=3 {
            let (scene, prepared) = frame(n, None);
            // A fresh device, as a fresh process would open.
            let fresh_ctx = caustica::gpu::test_context().expect("the adapter opens again");
            let fresh = GpuBackend::new(std::sync::Arc::new(fresh_ctx))
                .unwrap()
                .render_frame(&scene, &prepared, &Default::default())
                .unwrap();
            let earlier = &in_a_row[n as usize - 1];
            let bits = |f: &caustica::render::Frame| -> Vec<u32> {
                f.color
                    .iter()
                    .flat_map(|c| c.to_array())
                    .chain(f.aovs.iter().flat_map(|l| l.pixels.iter().copied()))
                    .map(f32::to_bits)
                    .collect()
            };
            assert!(
                bits(earlier) == bits(&fresh),
                "{integrator:?}: frame {n} differs between the backend that rendered frames 1..{n} and a fresh one"
            );
        }
    }
}

/// The stats counter `name` of a rendered frame.
fn stat(frame: &caustica::render::Frame, name: &str) -> f64 {
    frame
        .metadata
        .stat(name)
        .unwrap_or_else(|| panic!("no stat {name}"))
}

/// A GPU backend keeps the scene and its buffers on the device: the same frame rendered again
/// creates no buffer and no bind group and uploads nothing of the scene, and the next frame of the animation (a
/// light and a ball move; no mesh changes) uploads only the instances, the top level and the
/// lights, never the meshes.
#[test]
fn gpu_frames_after_the_first_allocate_nothing_and_upload_only_what_moved() {
    use caustica::gpu::GpuBackend;
    use caustica::render::Backend;
    let Some(ctx) = caustica::gpu::test_context() else {
        return;
    };
    let file = caustica::load_scene(&animated_scene()).unwrap();
    let assets = AssetCache::default();
    let overrides = Overrides {
        resolution: Some((32, 24)),
        spp: Some(1),
        integrator: Some(caustica::scene::Integrator::PhotonMap),
        ..Default::default()
    };
    let meshes = caustica::accel::MeshBuildCache::default();
    let frame = |n: i64| {
        let mut scene = caustica::evaluate_frame(&file, n, &assets, &overrides).unwrap();
        scene.photons.global = 10_000;
        scene.photons.caustic = 10_000;
        scene.gather.seeds = 64;
        scene.gather.rays = 16;
        let prepared = caustica::prepare_cached(&scene, &meshes).unwrap();
        (scene, prepared)
    };
    let backend = GpuBackend::new(std::sync::Arc::new(ctx)).unwrap();
    let (scene, prepared) = frame(1);
    let first = backend
        .render_frame(&scene, &prepared, &Default::default())
        .unwrap();
    assert!(stat(&first, "gpu/allocated_bytes") > 0.0);
    assert_eq!(
        stat(&first, "gpu/scene_uploaded_bytes"),
        stat(&first, "gpu/scene_bytes")
    );
    let again = backend
        .render_frame(&scene, &prepared, &Default::default())
        .unwrap();
    assert_eq!(stat(&again, "gpu/allocated_bytes"), 0.0);
    assert_eq!(stat(&again, "gpu/scene_uploaded_bytes"), 0.0);
    assert!(stat(&first, "gpu/bind_groups") > 0.0);
    assert_eq!(
        stat(&again, "gpu/bind_groups"),
        0.0,
        "the same frame binds the same buffers: every bind group comes from the cache ({} did)",
        stat(&again, "gpu/bind_groups_reused")
    );
    assert!(stat(&again, "gpu/pool_reused") > 0.0);
    assert_eq!(
        again.color, first.color,
        "the same frame from reused buffers"
    );

    let (scene, prepared) = frame(2);
    assert_eq!(prepared.meshes_reused as usize, scene.meshes.len());
    let next = backend
        .render_frame(&scene, &prepared, &Default::default())
        .unwrap();
    let moved: usize = prepared
        .memory_by_array()
        .iter()
        .filter(|(name, _)| ["instances", "top_nodes", "top_instance_refs"].contains(name))
        .map(|(_, bytes)| bytes)
        .sum();
    let lights = scene.lights.len() * std::mem::size_of::<caustica::gpu::upload::GpuLight>();
    let uploaded = stat(&next, "gpu/scene_uploaded_bytes") as usize;
    assert!(uploaded > 0, "the instances moved");
    assert!(
        uploaded <= moved + lights,
        "frame 2 uploaded {uploaded} bytes of the scene, more than its instances, top level and lights ({})",
        moved + lights
    );
}

/// Middle levels taken from the mesh cache make the same hierarchy as a fresh build.
#[test]
fn prepared_from_the_mesh_cache_equals_a_fresh_build() {
    let file = caustica::load_scene(&animated_scene()).unwrap();
    let assets = AssetCache::default();
    let meshes = caustica::accel::MeshBuildCache::default();
    for n in [1, 2, 7] {
        let scene = caustica::evaluate_frame(&file, n, &assets, &Overrides::default()).unwrap();
        let cached = caustica::prepare_cached(&scene, &meshes).unwrap();
        let fresh = caustica::prepare(&scene).unwrap();
        let expected_reused = if n == 1 { 0 } else { scene.meshes.len() as u32 };
        assert_eq!(cached.meshes_reused, expected_reused);
        assert_eq!(fresh.meshes_reused, 0);
        let bytes = |p: &caustica::accel::Prepared| -> Vec<Vec<u8>> {
            vec![
                bytemuck::cast_slice(&p.positions).to_vec(),
                bytemuck::cast_slice(&p.triangles).to_vec(),
                bytemuck::cast_slice(&p.quads).to_vec(),
                bytemuck::cast_slice(&p.meshes).to_vec(),
                bytemuck::cast_slice(&p.mesh_nodes).to_vec(),
                bytemuck::cast_slice(&p.prim_refs).to_vec(),
                bytemuck::cast_slice(&p.instances).to_vec(),
                bytemuck::cast_slice(&p.top_nodes).to_vec(),
                bytemuck::cast_slice(&p.top_instance_refs).to_vec(),
            ]
        };
        assert!(bytes(&cached) == bytes(&fresh), "frame {n}");
    }
}

/// The device clock counts every submission of a frame under the stage that made it: the
/// stages' device times add up to the frame's, and the photon-mapping stages each have theirs.
#[test]
fn a_gpu_frames_device_time_is_the_sum_of_its_stages() {
    use caustica::gpu::GpuBackend;
    use caustica::render::Backend;
    let Some(ctx) = caustica::gpu::test_context() else {
        return;
    };
    if !ctx.info.features.timestamps_inside_encoders {
        eprintln!("skipping: the adapter has no timestamps inside encoders, so no device clock");
        return;
    }
    let file = caustica::load_scene(&animated_scene()).unwrap();
    let overrides = Overrides {
        resolution: Some((24, 16)),
        spp: Some(1),
        integrator: Some(caustica::scene::Integrator::PhotonMap),
        ..Default::default()
    };
    let mut scene = caustica::evaluate_frame(&file, 1, &AssetCache::default(), &overrides).unwrap();
    scene.photons.global = 5_000;
    scene.photons.caustic = 5_000;
    scene.gather.seeds = 32;
    scene.gather.rays = 16;
    let prepared = caustica::prepare(&scene).unwrap();
    let backend = GpuBackend::new(std::sync::Arc::new(ctx)).unwrap();
    let frame = backend
        .render_frame(&scene, &prepared, &Default::default())
        .unwrap();
    let gpu = frame
        .metadata
        .stats
        .gpu
        .as_ref()
        .expect("a GPU frame's figures");
    let stages: Vec<(&str, f64)> = gpu
        .device_busy
        .0
        .iter()
        .map(|(stage, ms)| (stage.as_str(), *ms))
        .collect();
    let total = stat(&frame, "gpu/device_ms");
    let sum: f64 = stages.iter().map(|(_, v)| v).sum();
    assert!(total > 0.0);
    assert!(
        (sum - total).abs() <= 1e-9 * total.max(1.0),
        "stages {sum} ms, frame {total} ms"
    );
    for stage in [
        "camera_rays",
        "photons/global",
        "kdtree/global",
        "shade_trees",
        "gather/final_gather",
        "gather/caustics",
        "film",
    ] {
        assert!(
            stages.iter().any(|(s, v)| *s == stage && *v > 0.0),
            "no device time for {stage}: {stages:?}"
        );
    }
}

#[test]
fn a_render_that_stops_removes_its_placeholders_and_keeps_its_finished_frames() {
    let dir = tempfile::tempdir().unwrap();
    let job = RenderJob {
        frames: Some(vec![1, 2, 3]),
        overrides: Overrides {
            resolution: Some((8, 6)),
            spp: Some(1),
            output: Some(dir.path().join("p_####.exr").to_str().unwrap().to_string()),
            ..Default::default()
        },
        placeholders: true,
        ..RenderJob::new(animated_scene(), Device::Cpu)
    };
    // One device, which renders frame 1 and then fails: the job stops at frame 2.
    let failing = support::Watched::failing_from(&caustica::cpu::CpuBackend, 1);
    let e = caustica::render_animation_on(&job, &[&failing], |_| {}).unwrap_err();
    assert!(e.to_string().contains("injected failure"), "{e}");
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["p_0001.exr"],
        "no placeholder of an unrendered frame is left"
    );
    caustica::io::read_frame(&dir.path().join("p_0001.exr")).unwrap();
}

/// A frame without caustic photons (McGuire's box: its one light is diffuse) rendered again
/// sends the device only its per-dispatch parameters, not an image-sized buffer of zeros for
/// the absent caustics.
#[test]
fn a_frame_without_caustic_photons_uploads_no_stand_in_for_them() {
    use caustica::gpu::GpuBackend;
    use caustica::render::Backend;
    let Some(ctx) = caustica::gpu::test_context() else {
        return;
    };
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenes/cornell_mcguire.csc");
    let file = caustica::load_scene(&path).unwrap();
    let overrides = Overrides {
        resolution: Some((128, 128)),
        spp: Some(1),
        integrator: Some(caustica::scene::Integrator::PhotonMap),
        ..Default::default()
    };
    let mut scene = caustica::evaluate_frame(&file, 1, &AssetCache::default(), &overrides).unwrap();
    scene.photons.global = 10_000;
    scene.gather.seeds = 64;
    scene.gather.rays = 16;
    assert_eq!(scene.photons.caustic, 0);
    let prepared = caustica::prepare(&scene).unwrap();
    let backend = GpuBackend::new(std::sync::Arc::new(ctx)).unwrap();
    backend
        .render_frame(&scene, &prepared, &Default::default())
        .unwrap();
    let again = backend
        .render_frame(&scene, &prepared, &Default::default())
        .unwrap();
    let uploaded = stat(&again, "gpu/uploaded_bytes");
    // 128 × 128 shading points' zero caustics were 256 KiB.
    assert!(
        uploaded < 64.0 * 1024.0,
        "the frame uploaded {uploaded} bytes"
    );
}
