//! Emissive analytic spheres as lights (`LightKind::Sphere`): shadow rays spread over the cone
//! a sphere covers give a floor the exact irradiance of a sphere on both backends, and
//! multiple importance sampling between those shadow rays and a rough floor's lobe keeps the
//! image's mean whatever the number of shadow rays, and equal to a finely tessellated
//! sphere's. (Their photons: `tests/photons.rs`; the GPU against the CPU under every light:
//! `tests/rough_materials.rs`.)

mod support;

use caustica::io::AssetCache;
use caustica::lang::SceneFile;
use caustica::render::{Frame, RenderOptions};
use caustica::scene::{LightKind, Scene};
use glam::Vec3;

const RADIUS: f32 = 0.5;
const HEIGHT: f32 = 2.0;
const RADIANCE: Vec3 = Vec3::new(4.0, 3.0, 2.0);
const ALBEDO: f32 = 0.6;

fn scene(text: &str) -> Scene {
    SceneFile::from_str("sphere_light.csc", text)
        .unwrap()
        .eval(1, &AssetCache::new())
        .unwrap()
}

/// A grey floor under an emissive analytic sphere whose centre is `HEIGHT` above it, seen from
/// straight above by a camera between them (cameras are not geometry), with direct light only.
fn floor_under_a_sphere() -> Scene {
    let text = format!(
        "camera {{ position 0 1 0 look_at 0 0 0 up 0 0 -1 fov 60 }}
         film {{ resolution 32 32 spp 1 integrator whitted max_depth 1 }}
         material grey {{ diffuse {ALBEDO} {ALBEDO} {ALBEDO} }}
         material glow {{ emissive {} {} {} samples 16 }}
         mesh floor {{ quad size 8 8 }}
         mesh ball {{ sphere radius {RADIUS} analytic }}
         instance {{ mesh floor material grey }}
         instance {{ mesh ball material glow translate 0 {HEIGHT} 0 }}
         output {{ path \"out/sphere_light_####.exr\" layers position }}",
        RADIANCE.x, RADIANCE.y, RADIANCE.z
    );
    let scene = scene(&text);
    assert!(
        matches!(scene.lights.as_slice(), [l] if matches!(l.kind, LightKind::Sphere { .. })),
        "{:?}",
        scene.lights
    );
    scene
}

/// A floor point at horizontal distance x from the foot of a sphere of radius r and radiance
/// L, its centre h above, sees the whole sphere above its horizon: E = π L (r/D)² cos β with
/// D² = x² + h² and cos β = h/D, so the floor's radiance is ρ/π · E = ρ L r² h / D³.
fn expected_radiance(x: f32) -> Vec3 {
    let d = (x * x + HEIGHT * HEIGHT).sqrt();
    RADIANCE * (ALBEDO * RADIUS * RADIUS * HEIGHT / (d * d * d))
}

/// Each pixel against the exact radiance of the floor point it sees (its first-hit position
/// layer): the whole image's mean, and the means of four rings about the sphere's foot, each
/// within 0.5% (a systematic error in the sampler's cone or density shows as a ring's bias;
/// a pixel's noise averages out over the 100–400 pixels of a ring).
fn assert_exact_irradiance(frame: &Frame, backend: &str) {
    let positions = support::layer_rgb(frame, "P");
    let mut rings = [(Vec3::ZERO, Vec3::ZERO); 4];
    let mut worst = 0.0f32;
    for (c, p) in frame.color.iter().zip(&positions) {
        let x = glam::Vec2::new(p.x, p.z).length();
        let expected = expected_radiance(x);
        worst = worst.max(((*c - expected).abs() / expected).max_element());
        // The image spans |x|, |z| < tan 30° ≈ 0.577; the corners reach 0.816.
        let ring = ((x / 0.2) as usize).min(3);
        rings[ring].0 += *c;
        rings[ring].1 += expected;
    }
    let (sum, want) = rings
        .iter()
        .fold((Vec3::ZERO, Vec3::ZERO), |(a, b), r| (a + r.0, b + r.1));
    let mean_error = ((sum - want).abs() / want).max_element();
    eprintln!(
        "{backend}: mean {:.4}% off, worst pixel {:.3}% (noise of 16 shadow rays)",
        mean_error * 100.0,
        worst * 100.0
    );
    assert!(
        mean_error < 0.005,
        "{backend}: the mean is {mean_error} off"
    );
    for (k, (got, expected)) in rings.iter().enumerate() {
        let error = ((*got - *expected).abs() / *expected).max_element();
        eprintln!("{backend}: ring {k} {:.4}% off", error * 100.0);
        assert!(error < 0.005, "{backend}: ring {k} is {error} off");
    }
}

#[test]
fn a_floor_under_a_sphere_light_gets_the_exact_irradiance_of_a_sphere_on_both_backends() {
    let scene = floor_under_a_sphere();
    let prepared = caustica::prepare(&scene).unwrap();
    let cpu = caustica::cpu::render_whitted(&scene, &prepared, &RenderOptions::default());
    assert_exact_irradiance(&cpu, "CPU");
    let Some(ctx) = caustica::gpu::test_context() else {
        return;
    };
    let gpu = caustica::gpu::GpuBackend::new(std::sync::Arc::new(ctx)).unwrap();
    let frame = gpu
        .render(&scene, &prepared, &RenderOptions::default())
        .unwrap();
    assert_exact_irradiance(&frame, "GPU");
}

fn mean(frame: &Frame) -> Vec3 {
    frame.color.iter().copied().sum::<Vec3>() / frame.color.len() as f32
}

/// A rough gold floor reflecting a glowing sphere, with 1 or 8 shadow rays per point or as a
/// 512-segment tessellation (an emissive mesh, sampled by area): the power heuristic's weights
/// change with each but must sum to one, so the mean stays put. Each render averages 64² × 64
/// paths; the means agree within 1%.
#[test]
fn multiple_importance_sampling_keeps_the_mean_whatever_a_sphere_lights_shadow_ray_count() {
    let render = |lamp: &str, samples: u32| {
        let text = format!(
            "camera {{ position 0 1 3 look_at 0 0 0 fov 40 }}
             film {{ resolution 64 64 spp 64 integrator whitted max_depth 4 }}
             material gold {{ conductor metal gold roughness 0.4 }}
             material glow {{ emissive 5 5 5 samples {samples} }}
             mesh floor {{ quad size 6 6 }}
             mesh lamp {{ {lamp} }}
             instance {{ mesh floor material gold }}
             instance {{ mesh lamp material glow translate 0 1.2 -1 }}"
        );
        let scene = scene(&text);
        let prepared = caustica::prepare(&scene).unwrap();
        mean(&caustica::cpu::render_whitted(
            &scene,
            &prepared,
            &RenderOptions::default(),
        ))
    };
    let one = render("sphere radius 0.4 analytic", 1);
    let eight = render("sphere radius 0.4 analytic", 8);
    let mesh = render("sphere radius 0.4 segments 512", 4);
    for (what, m) in [("8 shadow rays", eight), ("a tessellated sphere", mesh)] {
        let error = ((m - one).abs() / one).max_element();
        eprintln!("{what}: {m} against {one} ({:.3}%)", error * 100.0);
        assert!(error < 0.01, "{what}: {m} against {one}");
    }
}
