//! The environment light: a uniform sky of radiance 1 around a lone diffuse sphere of albedo ½
//! gives ½ on the sphere and 1 where camera rays miss, with Whitted and photon mapping on the
//! CPU and with photon mapping on the GPU; photons leave a sky map in proportion to its light.

use caustica::io::AssetCache;
use caustica::lang::SceneFile;
use caustica::render::{Frame, RenderOptions};
use caustica::scene::{Integrator, Scene};
use glam::Vec3;

/// A sphere of radius 1 seen from 3 away (angular radius asin ⅓ ≈ 19.5°) in a 50° field of
/// view: the image centre sees the sphere, the corners (33° off axis) the sky.
fn uniform_sky_sphere(integrator: &str) -> Scene {
    let text = format!(
        "camera {{ position 0 0 3 look_at 0 0 0 fov 50 }}
         film {{ resolution 24 24 spp 4 integrator {integrator} }}
         material grey {{ diffuse 0.5 }}
         mesh ball {{ sphere radius 1 segments 128 }}
         instance {{ mesh ball material grey }}
         light environment {{ radiance 1 samples 64 }}
         photons {{ global 20000 caustic 0 }}
         gather {{ seeds 64 rays 32 }}"
    );
    let file = SceneFile::from_str("sky.csc", &text).unwrap();
    file.eval(1, &AssetCache::new()).unwrap()
}

/// The mean colour of the pixels within 15° of the view axis (all on the sphere), and the
/// colours of the four corners.
fn sphere_and_corners(frame: &Frame) -> (Vec3, [Vec3; 4]) {
    let (w, h) = (frame.width as usize, frame.height as usize);
    let half = (25.0f32).to_radians().tan();
    let mut sum = Vec3::ZERO;
    let mut count = 0;
    for y in 0..h {
        for x in 0..w {
            let sx = ((x as f32 + 0.5) / w as f32 * 2.0 - 1.0) * half;
            let sy = ((y as f32 + 0.5) / h as f32 * 2.0 - 1.0) * half;
            if (sx * sx + sy * sy).sqrt().atan().to_degrees() < 15.0 {
                sum += frame.color[y * w + x];
                count += 1;
            }
        }
    }
    let corners = [0, w - 1, (h - 1) * w, h * w - 1].map(|i| frame.color[i]);
    (sum / count as f32, corners)
}

/// Irradiance π from every direction above the surface gives radiance ρ·π/π = ρ = ½; nothing
/// else lights a lone convex sphere (its gather rays all leave into the sky, which they see
/// black, as the sky's light arrives through the shadow rays). Each pixel averages 4 × 64
/// shadow rays; the estimator `L cos/pdf` has a relative deviation of about 1.3 per ray, so the
/// mean of the ~150 pixels inside 15° is within about 0.5% at one standard deviation: 2% is
/// four of them.
fn assert_half_on_the_sphere_and_one_in_the_corners(frame: &Frame, what: &str) {
    let (sphere, corners) = sphere_and_corners(frame);
    let error = ((sphere - Vec3::splat(0.5)).abs() / 0.5).max_element();
    eprintln!("{what}: the sphere's mean is {sphere}");
    assert!(error < 0.02, "{what}: the sphere's mean is {sphere}");
    for c in corners {
        assert_eq!(
            c,
            Vec3::ONE,
            "{what}: a camera ray that misses sees the sky"
        );
    }
}

#[test]
fn a_diffuse_sphere_of_albedo_half_under_a_uniform_sky_of_one_is_half_on_the_cpu() {
    for integrator in ["whitted", "photon_map"] {
        let scene = uniform_sky_sphere(integrator);
        assert!(matches!(
            scene.film.integrator,
            Integrator::Whitted | Integrator::PhotonMap
        ));
        let prepared = caustica::prepare(&scene).unwrap();
        let frame = caustica::cpu::render_whitted(&scene, &prepared, &RenderOptions::default());
        assert_half_on_the_sphere_and_one_in_the_corners(&frame, integrator);
    }
}

#[test]
fn a_diffuse_sphere_of_albedo_half_under_a_uniform_sky_of_one_is_half_on_the_gpu() {
    let Some(ctx) = caustica::gpu::test_context() else {
        return;
    };
    let gpu = caustica::gpu::GpuBackend::new(std::sync::Arc::new(ctx)).unwrap();
    let scene = uniform_sky_sphere("photon_map");
    let prepared = caustica::prepare(&scene).unwrap();
    let frame = gpu
        .render(&scene, &prepared, &RenderOptions::default())
        .unwrap();
    assert_half_on_the_sphere_and_one_in_the_corners(&frame, "GPU photon_map");
}
