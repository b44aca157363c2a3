//! Analytic checks of the CPU Whitted renderer on scenes built directly in the IR.

mod support;

use support::{analytic_sphere_scene, instance, light, material, mesh};

use std::f32::consts::PI;

use glam::{Affine3A, Vec2, Vec3};

use caustica::accel::{PrepareOptions, Prepared, Ray};
use caustica::cpu::{render_whitted, Tracer};
use caustica::render::RenderOptions;
use caustica::scene::{shapes, Camera, Film, FresnelMode, LightKind, MaterialKind, Scene};

/// Inside a diffuse sphere with a point light at its centre, the radiance seen (direct light
/// only) is ρ/π · Φ/(4πR²) (see `support::analytic_sphere_scene`).
#[test]
fn diffuse_sphere_lit_from_its_centre_has_the_radiance_computed_by_hand() {
    let (scene, expected) = analytic_sphere_scene();
    let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let frame = render_whitted(&scene, &prepared, &RenderOptions::default());
    for (i, c) in frame.color.iter().enumerate() {
        let rel = ((*c - expected) / expected).abs().max_element();
        // The tessellated wall is at most R(1 − cos(π/256)) ≈ 0.008% closer than R; shading
        // normals are exact. Allow 0.2% for that and for float error.
        assert!(
            rel < 2e-3,
            "pixel {i}: {c} vs {expected} (relative error {rel})"
        );
    }
}

/// A ray through a glass slab with parallel faces leaves in its original direction, shifted
/// sideways by d·sin(θ − θt)/cos θt.
#[test]
fn refraction_through_a_glass_slab_leaves_the_direction_unchanged() {
    let thickness = 0.5;
    let scene = Scene {
        materials: vec![material(
            "glass",
            MaterialKind::Dielectric {
                ior: 1.5,
                tint: Vec3::ONE,
                fresnel: FresnelMode::Exact,
                roughness: 0.0,
            },
        )],
        meshes: vec![mesh(
            "slab",
            shapes::box_mesh(Vec3::new(20.0, thickness, 20.0)),
        )],
        instances: vec![instance(0, 0, Affine3A::IDENTITY)],
        ..Default::default()
    };
    let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let tracer = Tracer::new(&scene, &prepared);
    for theta_deg in [0.0f32, 10.0, 35.0, 60.0, 80.0] {
        let theta = theta_deg.to_radians();
        let dir = Vec3::new(theta.sin(), -theta.cos(), 0.0);
        let origin = Vec3::new(0.0, 1.0, 0.0);
        let ray = Ray {
            origin,
            dir,
            t_min: 0.0,
            t_max: f32::INFINITY,
        };
        let path = tracer.follow_refraction(&ray, 8);
        assert_eq!(
            path.len(),
            2,
            "at {theta_deg}°: expected to enter and leave the slab, got {path:?}"
        );
        let (exit_point, exit_dir) = path[1];
        assert!(
            (exit_dir - dir).length() < 1e-5,
            "at {theta_deg}°: {exit_dir} vs {dir}"
        );
        // Lateral shift between the incoming line and the outgoing one.
        let theta_t = (theta.sin() / 1.5).asin();
        let expected_shift = thickness * (theta - theta_t).sin() / theta_t.cos();
        let to_exit = exit_point - origin;
        let shift = (to_exit - dir * to_exit.dot(dir)).length();
        assert!(
            (shift - expected_shift).abs() < 1e-4,
            "at {theta_deg}°: shift {shift} vs {expected_shift}"
        );
    }
}

/// A mirror facing a diffuse wall shows the wall with the mirror's reflectance.
#[test]
fn mirror_reflects_the_wall_behind_the_camera_scaled_by_its_reflectance() {
    let albedo = Vec3::splat(0.5);
    let reflectance = Vec3::new(0.9, 0.5, 0.2);
    // Camera at z=1 looks at a mirror in the plane z=0; a diffuse wall at z=3 faces it and is lit
    // by a point light between them.
    let scene = Scene {
        camera: Camera {
            position: Vec3::new(0.0, 0.0, 1.0),
            look_at: Vec3::ZERO,
            fov_deg: 1.0,
            ..Default::default()
        },
        film: Film {
            width: 4,
            height: 4,
            spp: 1,
            integrator: caustica::scene::Integrator::Whitted,
            ..Default::default()
        },
        materials: vec![
            material("mirror", MaterialKind::Mirror { reflectance }),
            material(
                "wall",
                MaterialKind::Diffuse {
                    albedo,
                    texture: None,
                },
            ),
        ],
        meshes: vec![mesh("plane", shapes::grid_quad(Vec2::splat(10.0), [1, 1]))],
        instances: vec![
            // grid_quad lies in XZ facing +Y: rotate it to face +Z (mirror) and −Z (wall).
            instance(0, 0, Affine3A::from_rotation_x(PI / 2.0)),
            instance(
                0,
                1,
                Affine3A::from_translation(Vec3::new(0.0, 0.0, 3.0))
                    * Affine3A::from_rotation_x(-PI / 2.0),
            ),
        ],
        lights: vec![light(LightKind::Point {
            position: Vec3::new(0.0, 0.0, 2.0),
            power: Vec3::splat(40.0),
        })],
        ..Default::default()
    };
    let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let frame = render_whitted(&scene, &prepared, &RenderOptions::default());
    // The centre of the reflected image is the wall point nearest to the light: E = I / 1².
    let wall = albedo / PI * (40.0 / (4.0 * PI));
    let expected = reflectance * wall;
    for c in &frame.color {
        let rel = ((*c - expected) / expected).abs().max_element();
        assert!(rel < 0.01, "{c} vs {expected}");
    }
}

/// Light that a blocker stops does not arrive: the floor under a blocker is black.
#[test]
fn an_occluder_casts_a_shadow_from_a_point_light() {
    // The camera hangs between the floor and a blocker that covers x > 0, looking down; the light
    // is above the blocker, so the floor at x > 0 is in shadow and the floor at x < 0 is lit.
    let scene = Scene {
        camera: Camera {
            position: Vec3::new(0.0, 0.5, 0.0),
            look_at: Vec3::ZERO,
            up: Vec3::NEG_Z,
            fov_deg: 90.0,
            ..Default::default()
        },
        film: Film {
            width: 32,
            height: 32,
            spp: 1,
            integrator: caustica::scene::Integrator::Whitted,
            ..Default::default()
        },
        materials: vec![material(
            "white",
            MaterialKind::Diffuse {
                albedo: Vec3::ONE,
                texture: None,
            },
        )],
        meshes: vec![
            mesh("floor", shapes::grid_quad(Vec2::splat(20.0), [1, 1])),
            mesh("blocker", shapes::box_mesh(Vec3::new(10.0, 0.1, 10.0))),
        ],
        instances: vec![
            instance(0, 0, Affine3A::IDENTITY),
            instance(1, 0, Affine3A::from_translation(Vec3::new(5.0, 1.0, 0.0))),
        ],
        lights: vec![light(LightKind::Point {
            position: Vec3::new(0.0, 2.0, 0.0),
            power: Vec3::splat(100.0),
        })],
        ..Default::default()
    };
    let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let frame = render_whitted(&scene, &prepared, &RenderOptions::default());
    let row = 16 * 32;
    assert!(
        frame.color[row + 2].x > 0.01,
        "the floor at x < 0 is dark: {}",
        frame.color[row + 2]
    );
    assert_eq!(
        frame.color[row + 29],
        Vec3::ZERO,
        "the floor under the blocker is lit"
    );
}

/// A quad area light seen head-on shows its radiance, and lights a floor with the irradiance of a
/// uniform disk-like emitter: compare against the closed form for a small square far away.
#[test]
fn quad_light_far_from_a_floor_gives_the_irradiance_of_a_point_source() {
    let radiance = Vec3::splat(50.0);
    let side = 0.05;
    let height = 4.0;
    let scene = Scene {
        camera: Camera {
            position: Vec3::new(0.0, 1.0, 0.0),
            look_at: Vec3::new(0.0, 0.0, 0.0),
            up: Vec3::Z,
            fov_deg: 2.0,
            ..Default::default()
        },
        film: Film {
            width: 2,
            height: 2,
            spp: 1,
            integrator: caustica::scene::Integrator::Whitted,
            ..Default::default()
        },
        materials: vec![material(
            "white",
            MaterialKind::Diffuse {
                albedo: Vec3::ONE,
                texture: None,
            },
        )],
        meshes: vec![mesh("floor", shapes::grid_quad(Vec2::splat(20.0), [1, 1]))],
        instances: vec![instance(0, 0, Affine3A::IDENTITY)],
        lights: vec![light(LightKind::Quad {
            corner: Vec3::new(-side / 2.0, height, -side / 2.0),
            // edge_u × edge_v points down, towards the floor.
            edge_u: Vec3::new(side, 0.0, 0.0),
            edge_v: Vec3::new(0.0, 0.0, side),
            radiance,
            samples: 4,
        })],
        ..Default::default()
    };
    let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let frame = render_whitted(&scene, &prepared, &RenderOptions::default());
    // E ≈ L · A / h² for a small emitter facing the point straight on.
    let expected = radiance * (side * side) / (height * height) / PI;
    for c in &frame.color {
        let rel = ((*c - expected) / expected).abs().max_element();
        assert!(rel < 0.01, "{c} vs {expected}");
    }
}

/// Irradiance / π under the centre of a square emitter of side `side` at `height`, facing down,
/// from the form factor of a differential area to a parallel rectangle (four rectangles with a
/// corner above the point).
fn square_form_factor(side: f64, height: f64) -> f64 {
    let (x, y) = (side / 2.0 / height, side / 2.0 / height);
    let corner = (x / (1.0 + x * x).sqrt() * (y / (1.0 + x * x).sqrt()).atan()
        + y / (1.0 + y * y).sqrt() * (x / (1.0 + y * y).sqrt()).atan())
        / (2.0 * std::f64::consts::PI);
    4.0 * corner
}

#[test]
fn an_emissive_square_lights_the_point_below_it_by_its_form_factor() {
    let radiance = Vec3::new(4.0, 3.0, 2.0);
    let (side, height) = (1.0f32, 0.8f32);
    // Facing down: the quad's +Y front turned over; once more with a mirroring scale, which
    // must not turn the emitting side.
    let down =
        Affine3A::from_translation(Vec3::new(0.0, height, 0.0)) * Affine3A::from_rotation_x(PI);
    let mirrored = down * Affine3A::from_scale(Vec3::new(-1.0, 1.0, 1.0));
    for transform in [down, mirrored] {
        let mut scene = Scene {
            camera: Camera {
                position: Vec3::new(0.0, 0.5, 0.0),
                look_at: Vec3::ZERO,
                up: Vec3::Z,
                fov_deg: 1.0,
                ..Default::default()
            },
            film: Film {
                width: 2,
                height: 2,
                spp: 4,
                integrator: caustica::scene::Integrator::Whitted,
                ..Default::default()
            },
            materials: vec![
                material(
                    "white",
                    MaterialKind::Diffuse {
                        albedo: Vec3::ONE,
                        texture: None,
                    },
                ),
                material(
                    "lamp",
                    MaterialKind::Emissive {
                        radiance,
                        samples: 256,
                    },
                ),
            ],
            meshes: vec![
                mesh("floor", shapes::grid_quad(Vec2::splat(20.0), [1, 1])),
                mesh("lamp", shapes::grid_quad(Vec2::splat(side), [1, 1])),
            ],
            instances: vec![
                instance(0, 0, Affine3A::IDENTITY),
                instance(1, 1, transform),
            ],
            ..Default::default()
        };
        scene.add_emissive_lights();
        assert_eq!(scene.lights.len(), 1);
        let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
        let frame = render_whitted(&scene, &prepared, &RenderOptions::default());
        let expected = radiance * square_form_factor(side as f64, height as f64) as f32;
        for c in &frame.color {
            // 4 × 256 stratified samples of a smooth integrand; the pixels see points within
            // 0.5 · tan(0.5°) ≈ 0.004 of the centre, where the form factor is flat.
            let rel = ((*c - expected) / expected).abs().max_element();
            assert!(rel < 0.01, "{c} vs {expected} (relative error {rel})");
        }
    }
}

/// A floor point lit by a sun of apparent diameter `angle_deg` straight above, beside the
/// straight edge of an occluder at `height` (positive `offset`: on the lit side of the edge's
/// shadow): the pixel's colour over the unoccluded colour, rendered with 256 spp.
fn sun_light_fraction_beside_an_edge(angle_deg: f32, offset: f32, height: f32) -> f32 {
    let irradiance = Vec3::splat(2.0);
    let mut scene = Scene {
        camera: Camera {
            position: Vec3::new(0.0, 0.2, offset),
            look_at: Vec3::new(0.0, 0.0, offset),
            up: Vec3::X,
            fov_deg: 0.2,
            ..Default::default()
        },
        film: Film {
            width: 1,
            height: 1,
            spp: 1024,
            integrator: caustica::scene::Integrator::Whitted,
            ..Default::default()
        },
        materials: vec![material(
            "white",
            MaterialKind::Diffuse {
                albedo: Vec3::ONE,
                texture: None,
            },
        )],
        meshes: vec![
            mesh("floor", shapes::grid_quad(Vec2::splat(20.0), [1, 1])),
            // A thin slab over z < 0, its edge along the x axis.
            mesh("slab", shapes::box_mesh(Vec3::new(10.0, 0.01, 10.0))),
        ],
        instances: vec![
            instance(0, 0, Affine3A::IDENTITY),
            instance(
                1,
                0,
                Affine3A::from_translation(Vec3::new(0.0, height, -5.0)),
            ),
        ],
        lights: vec![light(LightKind::Directional {
            direction: Vec3::NEG_Y,
            irradiance,
            angle_deg,
        })],
        ..Default::default()
    };
    scene.film.seed = 7;
    let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let frame = render_whitted(&scene, &prepared, &RenderOptions::default());
    frame.color[0].x / (irradiance.x / PI)
}

/// The part of a disk of unit radius on the far side of a chord at distance `x` from its
/// centre (x in −1..1).
fn disk_beyond_chord(x: f32) -> f32 {
    let x = x.clamp(-1.0, 1.0);
    (x.acos() - x * (1.0 - x * x).sqrt()) / PI
}

#[test]
fn a_sun_casts_a_penumbra_as_wide_as_its_disk_and_a_directional_light_none() {
    let height = 1.0;
    let angle = 2.0f32;
    // The penumbra's half-width on the floor: height · tan(angle / 2).
    let half = height * (0.5 * angle).to_radians().tan();
    for offset in [-0.5 * half, 0.5 * half] {
        let sharp = sun_light_fraction_beside_an_edge(0.0, offset, height);
        let want_sharp = if offset > 0.0 { 1.0 } else { 0.0 };
        assert!(
            (sharp - want_sharp).abs() < 1e-3,
            "directional at {offset}: {sharp}"
        );
        // Seen from a point `offset` from the edge's shadow line, the edge cuts the sun's disk
        // at offset / half of its radius; the side beyond the chord is hidden.
        let soft = sun_light_fraction_beside_an_edge(angle, offset, height);
        let want_soft = 1.0 - disk_beyond_chord(offset / half);
        // 1024 stratified shadow rays; the pixel spans ±0.0002 of 0.0087.
        assert!(
            (soft - want_soft).abs() < 0.04,
            "sun at {offset}: {soft}, the visible part of the disk is {want_soft}"
        );
    }
}

#[test]
fn a_sun_straight_above_gives_its_irradiance_to_the_floor() {
    let lit = sun_light_fraction_beside_an_edge(10.0, 1.0, 1.0);
    // The estimator is exact in expectation; its spread across 1024 samples of cos over a 5°
    // cone is below 1e-4.
    assert!((lit - 1.0).abs() < 1e-3, "{lit}");
}
