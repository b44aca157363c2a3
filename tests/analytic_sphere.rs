//! The analytic sphere (`mesh { sphere analytic }`): rays meet the exact sphere at its
//! silhouette, with radial normals, through an instance's transform; a point light at its
//! centre gives every pixel of its inside the same radiance on both backends; and the language
//! makes an emissive one a sphere light and refuses what an analytic sphere cannot be.

mod lang_support;
mod support;

use caustica::accel::primitives::intersect_sphere;
use caustica::accel::Ray;
use caustica::scene::{LightKind, MeshOrigin, Scene};
use glam::{Affine3A, Vec3};

/// The analytic sphere scene of `support` with the tessellated wall made exact.
fn exact_sphere_scene() -> (Scene, Vec3) {
    let (mut scene, expected) = support::analytic_sphere_scene();
    scene.meshes[0].origin = MeshOrigin::AnalyticSphere { radius: 2.0 };
    (scene, expected)
}

#[test]
fn rays_meet_the_exact_sphere_at_its_silhouette_and_not_beyond_it() {
    let r = 0.75;
    for (offset, hits) in [(r * (1.0 - 1e-5), true), (r * (1.0 + 1e-5), false)] {
        let hit = intersect_sphere(
            Vec3::new(offset, 0.0, 5.0),
            Vec3::NEG_Z,
            r,
            0.0,
            f32::INFINITY,
        );
        assert_eq!(hit.is_some(), hits, "a ray {offset} from the axis");
    }
    // Head-on: the nearer root, and from inside the farther one.
    let (t, _) = intersect_sphere(Vec3::new(0.0, 0.0, 5.0), Vec3::NEG_Z, r, 0.0, 10.0).unwrap();
    assert_eq!(t, 5.0 - r);
    let (t, _) = intersect_sphere(Vec3::ZERO, Vec3::X * 2.0, r, 1e-4, 10.0).unwrap();
    assert_eq!(t, r / 2.0);
    // A tiny sphere far away keeps its precision.
    let (t, _) = intersect_sphere(Vec3::new(0.0, 0.0, 1e4), Vec3::NEG_Z, 1e-2, 0.0, 2e4).unwrap();
    assert!((t - (1e4 - 1e-2)).abs() < 2e-3, "{t}");
}

#[test]
fn an_instanced_analytic_sphere_has_exact_points_and_radial_normals() {
    let (mut scene, _) = exact_sphere_scene();
    scene.instances[0].transform = Affine3A::from_translation(Vec3::new(1.0, 2.0, 3.0))
        * Affine3A::from_scale(Vec3::splat(0.5));
    let prepared = caustica::prepare(&scene).unwrap();
    let centre = Vec3::new(1.0, 2.0, 3.0);
    for k in 0..64 {
        let a = k as f32 * 0.37;
        let target = centre + Vec3::new(a.cos(), (a * 1.7).sin(), a.sin()).normalize() * 0.9;
        let origin = Vec3::new(-4.0, 1.0, -2.0);
        let ray = Ray::new(origin, target - origin);
        let hit = prepared
            .intersect(&ray)
            .expect("the ray points into the sphere");
        let sp = prepared.surface_point(&ray, &hit);
        let radial = sp.position - centre;
        assert!((radial.length() - 1.0).abs() < 1e-5, "{}", radial.length());
        assert!(sp.shading_normal.dot(radial.normalize()) > 1.0 - 1e-6);
        assert!(sp.geometric_normal.dot(radial.normalize()) > 1.0 - 1e-6);
    }
}

/// Inside a sphere of radius R lit by a point light of power Φ at its centre, every point of the
/// wall faces the light: L = ρ/π · Φ/(4πR²) everywhere, exactly up to rounding (a tessellated
/// sphere's flat faces vary by their distance and tilt).
fn assert_uniform(color: &[Vec3], expected: Vec3, backend: &str) {
    for (i, c) in color.iter().enumerate() {
        let error = ((*c - expected).abs() / expected).max_element();
        assert!(error < 1e-4, "{backend} pixel {i}: {c} against {expected}");
    }
}

#[test]
fn the_inside_of_an_analytic_sphere_lit_from_its_centre_is_uniform_on_both_backends() {
    let (scene, expected) = exact_sphere_scene();
    let prepared = caustica::prepare(&scene).unwrap();
    let cpu = caustica::cpu::render_whitted(&scene, &prepared, &Default::default());
    assert_uniform(&cpu.color, expected, "CPU");
    let Some(ctx) = caustica::gpu::test_context() else {
        return;
    };
    let gpu = caustica::gpu::GpuBackend::new(std::sync::Arc::new(ctx)).unwrap();
    let frame = gpu.render(&scene, &prepared, &Default::default()).unwrap();
    assert_uniform(&frame.color, expected, "GPU");
}

#[test]
fn the_language_makes_analytic_spheres_lights_and_refuses_displacing_or_stretching_a_lit_one() {
    let scene = lang_support::scene(
        "material w { diffuse 0.5 }\nmesh ball { sphere radius 0.4 analytic }\ninstance { mesh ball material w }",
    );
    assert_eq!(
        scene.meshes[0].origin,
        MeshOrigin::AnalyticSphere { radius: 0.4 }
    );
    let errors = lang_support::errors(
        "vdmap v { file \"bark.exr\" }\nmesh ball { sphere analytic displacement v }",
    );
    assert!(
        errors.contains("scene.csc:2:29: error: an analytic sphere has no quads to displace"),
        "{errors}"
    );
    // An emissive analytic sphere is a light; stretched into an ellipsoid it is refused.
    let scene = lang_support::scene(
        "material lamp { emissive 5 5 5 }\nmesh ball { sphere analytic }\ninstance { mesh ball material lamp scale 2 translate 0 1 0 }",
    );
    assert!(
        matches!(
            scene.lights.last().map(|l| &l.kind),
            Some(LightKind::Sphere { sphere, .. })
                if sphere.radius == 2.0 && sphere.centre == Vec3::new(0.0, 1.0, 0.0)
        ),
        "{:?}",
        scene.lights
    );
    let errors = lang_support::errors(
        "material lamp { emissive 5 5 5 }\nmesh ball { sphere analytic }\ninstance { mesh ball material lamp scale 1 2 1 }",
    );
    assert!(
        errors.contains(
            "scene.csc:3:1: error: mesh \"ball\" is an analytic sphere and material \"lamp\" emits: an emissive analytic sphere must be scaled alike along every axis"
        ),
        "{errors}"
    );
}
