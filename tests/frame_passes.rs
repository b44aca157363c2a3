//! Frames rendered in passes (`render::plan`): a frame whose camera rays outgrow one storage
//! binding renders on the GPU in passes and matches the CPU twin; a frame cut into passes is the
//! same image as the frame in one pass, on both backends, for Whitted and photon mapping.

mod support;

use std::path::PathBuf;
use std::sync::Arc;

use glam::Vec3;

use caustica::cpu::render_whitted;
use caustica::gpu::test_context;
use caustica::gpu::GpuBackend;
use caustica::io::AssetCache;
use caustica::render::{Frame, RenderOptions};
use caustica::scene::{Aov, Integrator, Scene};
use caustica::Overrides;
use support::assert_photon_layers_sum_to_the_colour;

fn scene(name: &str, overrides: Overrides) -> (Scene, caustica::accel::Prepared) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenes")
        .join(name);
    let file = caustica::load_scene(&path).unwrap();
    let scene = caustica::evaluate_frame(&file, 1, &AssetCache::default(), &overrides).unwrap();
    let prepared = caustica::prepare(&scene).unwrap();
    (scene, prepared)
}

/// Σ|a − b| / Σ|b| over the pixels' channels.
fn relative_l1(a: &[Vec3], b: &[Vec3]) -> f64 {
    let diff: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x - *y).abs().element_sum() as f64)
        .sum();
    let total: f64 = b.iter().map(|y| y.abs().element_sum() as f64).sum();
    diff / total.max(1e-12)
}

fn stat(frame: &Frame, name: &str) -> f64 {
    frame
        .metadata
        .stat(name)
        .unwrap_or_else(|| panic!("no statistic {name}"))
}

fn layer(frame: &Frame, name: &str) -> Vec<Vec3> {
    let l = frame.aov(name).unwrap_or_else(|| panic!("no layer {name}"));
    l.pixels
        .chunks(3)
        .map(|c| Vec3::new(c[0], c[1], c[2]))
        .collect()
}

fn options(max_pass_rays: Option<u64>) -> RenderOptions {
    RenderOptions {
        max_pass_rays,
        ..Default::default()
    }
}

#[test]
fn a_gpu_frame_whose_camera_rays_outgrow_one_binding_renders_in_passes_and_matches_the_cpu() {
    let Some(ctx) = test_context() else {
        return;
    };
    let gpu = GpuBackend::new(Arc::new(ctx)).unwrap();
    // 256² at 32 spp: 2.1M camera rays, whose child candidates (96 bytes a ray) need 201 MB in
    // one binding: more than lavapipe's 128 MiB, and than one pass may hold on any adapter
    // that lets a pass hold fewer than 2.1M rays.
    let (scene, prepared) = scene(
        "cornell_point.csc",
        Overrides {
            resolution: Some((256, 256)),
            spp: Some(32),
            layers: Some(vec![Aov::Albedo, Aov::Normal, Aov::Depth]),
            integrator: Some(Integrator::Whitted),
            ..Default::default()
        },
    );
    let limit = gpu.max_pass_rays(None);
    let frame_rays = 256 * 256 * 32;
    let forced = (limit >= frame_rays).then_some(frame_rays / 3);
    let frame = gpu.render(&scene, &prepared, &options(forced)).unwrap();
    assert!(stat(&frame, "frame/passes") >= 2.0);
    assert_eq!(stat(&frame, "rays/primary"), frame_rays as f64);
    let cpu = render_whitted(&scene, &prepared, &options(None));
    // The same samples on both backends: the whole-image agreement of gpu_whitted.rs.
    let colour = relative_l1(&frame.color, &cpu.color);
    assert!(colour < 0.01, "colour differs by {colour}");
    for name in ["Albedo", "N", "Ns"] {
        let d = relative_l1(&layer(&frame, name), &layer(&cpu, name));
        assert!(d < 0.01, "{name} differs by {d}");
    }
}

#[test]
fn a_frame_cut_into_passes_is_the_frame_in_one_pass_on_both_backends() {
    let (scene, prepared) = scene(
        "cornell_spheres.csc",
        Overrides {
            resolution: Some((40, 24)),
            spp: Some(5),
            layers: Some(vec![Aov::Albedo, Aov::Normal, Aov::Depth, Aov::Id]),
            integrator: Some(Integrator::Whitted),
            ..Default::default()
        },
    );
    // 5 × 3 tiles of 64 slots: 2 samples a pass (3 passes), and 64 × 4 slots (one sample of
    // four tiles a pass: 20 passes).
    let cuts = [Some(2 * 15 * 64), Some(64 * 4)];
    let check = |one: &Frame, cut: &Frame, what: &str| {
        // Only the order of the float additions differs: f32 rounding, far below any image
        // difference.
        let d = relative_l1(&cut.color, &one.color);
        assert!(d < 1e-5, "{what}: colour differs by {d}");
        for name in ["Albedo", "N", "Ns"] {
            let d = relative_l1(&layer(cut, name), &layer(one, name));
            assert!(d < 1e-5, "{what}: {name} differs by {d}");
        }
        assert_eq!(cut.alpha, one.alpha, "{what}: alpha");
        let depth = |f: &Frame| f.aov(caustica::render::DEPTH_LAYER).unwrap().pixels.clone();
        let d = relative_l1(
            &depth(cut)
                .iter()
                .map(|&z| Vec3::splat(z.min(1e6)))
                .collect::<Vec<_>>(),
            &depth(one)
                .iter()
                .map(|&z| Vec3::splat(z.min(1e6)))
                .collect::<Vec<_>>(),
        );
        assert!(d < 1e-5, "{what}: depth differs by {d}");
        assert_eq!(cut.aov("id"), one.aov("id"), "{what}: id");
    };
    let one = render_whitted(&scene, &prepared, &options(None));
    for cut in cuts {
        let frame = render_whitted(&scene, &prepared, &options(cut));
        check(&one, &frame, &format!("CPU in passes of {cut:?} rays"));
    }
    let Some(ctx) = test_context() else {
        return;
    };
    let gpu = GpuBackend::new(Arc::new(ctx)).unwrap();
    let one = gpu.render(&scene, &prepared, &options(None)).unwrap();
    assert_eq!(stat(&one, "frame/passes"), 1.0);
    for (cut, passes) in cuts.into_iter().zip([3.0, 20.0]) {
        let frame = gpu.render(&scene, &prepared, &options(cut)).unwrap();
        assert_eq!(stat(&frame, "frame/passes"), passes);
        check(&one, &frame, &format!("GPU in passes of {cut:?} rays"));
    }
}

#[test]
fn a_photon_mapped_frame_in_passes_traces_its_maps_and_their_irradiance_photons_once_and_matches_the_cpu(
) {
    let (mut scene, prepared) = scene(
        "cornell_spheres.csc",
        Overrides {
            resolution: Some((48, 48)),
            spp: Some(4),
            integrator: Some(Integrator::PhotonMap),
            layers: Some(vec![
                Aov::Direct,
                Aov::Indirect,
                Aov::Caustic,
                Aov::PhotonsGlobal,
                Aov::PhotonsCaustic,
            ]),
            ..Default::default()
        },
    );
    scene.photons.global = 50_000;
    scene.photons.caustic = 50_000;
    scene.gather.seeds = 256;
    scene.gather.rays = 64;
    // Two samples of the image a pass: two passes, each with its own seeds and gather.
    let cut = Some(2 * 36 * 64);
    let cpu = render_whitted(&scene, &prepared, &options(cut));
    // The photon maps are traced once for the frame, whatever the passes and layers, and the
    // global map's irradiance photons (every 4th of its photons) are precomputed once.
    assert_eq!(stat(&cpu, "photons/global_emitted"), 50_000.0);
    assert_eq!(stat(&cpu, "photons/caustic_emitted"), 50_000.0);
    assert_eq!(
        stat(&cpu, "gather/irradiance_photons"),
        (stat(&cpu, "photons/global_stored") / 4.0).ceil(),
        "once for the frame's two passes"
    );
    assert_photon_layers_sum_to_the_colour(&cpu);
    let Some(ctx) = test_context() else {
        return;
    };
    let gpu = GpuBackend::new(Arc::new(ctx)).unwrap();
    let frame = gpu.render(&scene, &prepared, &options(cut)).unwrap();
    assert_eq!(stat(&frame, "frame/passes"), 2.0);
    assert_eq!(stat(&frame, "photons/global_emitted"), 50_000.0);
    assert_eq!(stat(&frame, "photons/caustic_emitted"), 50_000.0);
    assert_eq!(
        stat(&frame, "gather/irradiance_photons"),
        (stat(&frame, "photons/global_stored") / 4.0).ceil(),
        "once for the frame's two passes"
    );
    assert_photon_layers_sum_to_the_colour(&frame);
    // The bound of photon_render.rs's single-pass agreement test: the GPU traces the same
    // photons, picks the same seeds per pass and gathers along the same rays as the CPU.
    let c = caustica::render::compare::compare(&frame.color, &cpu.color, 48, &[]).unwrap();
    assert!(c.relmse < 0.002, "relMSE GPU against CPU {}", c.relmse);
    for name in ["photons_global", "photons_caustic"] {
        let d = relative_l1(&layer(&frame, name), &layer(&cpu, name));
        assert!(d < 0.02, "{name} differs by {d}");
    }
}

#[test]
fn a_crop_renders_only_its_pixels_and_they_are_the_full_frames_on_both_backends() {
    let full = |crop| {
        scene(
            "cornell_spheres.csc",
            Overrides {
                resolution: Some((48, 32)),
                spp: Some(2),
                layers: Some(vec![Aov::Albedo]),
                integrator: Some(Integrator::Whitted),
                crop,
                ..Default::default()
            },
        )
    };
    let window = caustica::scene::CropWindow::new(0.25, 0.5, 0.5, 1.0).unwrap();
    let (whole, prepared) = full(None);
    let (cropped, _) = full(Some(window));
    // Pixels 12..24 × 16..32.
    assert_eq!(cropped.film.crop_pixels(), Some([12, 16, 24, 32]));
    let inside = |i: usize| (12..24).contains(&(i % 48)) && (16..32).contains(&(i / 48));
    let mut frames = vec![(
        render_whitted(&whole, &prepared, &options(None)),
        render_whitted(&cropped, &prepared, &options(None)),
    )];
    if let Some(ctx) = test_context() {
        let gpu = GpuBackend::new(Arc::new(ctx)).unwrap();
        frames.push((
            gpu.render(&whole, &prepared, &options(None)).unwrap(),
            gpu.render(&cropped, &prepared, &options(None)).unwrap(),
        ));
    }
    for (one, crop) in &frames {
        let device = &one.metadata.device;
        assert_eq!(crop.metadata.data_window, Some([12, 16, 24, 32]));
        // Only the crop's pixels got camera rays: 12 × 16 of 48 × 32, two samples each.
        assert_eq!(stat(crop, "rays/primary"), 12.0 * 16.0 * 2.0, "{device}");
        for i in 0..48 * 32 {
            if inside(i) {
                assert_eq!(crop.color[i], one.color[i], "{device}: pixel {i}");
                assert_eq!(crop.alpha[i], one.alpha[i], "{device}: pixel {i}");
            } else {
                assert_eq!(crop.color[i], Vec3::ZERO, "{device}: pixel {i}");
                assert_eq!(crop.alpha[i], 0.0, "{device}: pixel {i}");
            }
        }
    }
}
