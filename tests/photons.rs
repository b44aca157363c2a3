//! Photon tracing on the CPU twin and on the GPU: power is conserved in a closed box, both
//! backends store the same photons, and a glass sphere focuses a caustic under it.

mod support;

use caustica::accel::photon_estimate::PhotonRecord;
use caustica::accel::Prepared;
use caustica::cpu::photons::{trace_photons, PhotonMap};
use caustica::gpu::test_context;
use caustica::gpu::GpuBackend;
use caustica::render::photons::{PhotonPass, PHOTON_BOUNCES_MASK, PHOTON_SPECULAR_PATH};
use caustica::scene::{
    shapes, Camera, EnvMap, Environment, Film, FresnelMode, LightKind, MaterialKind, MeshOrigin,
    Scene, TextureImage,
};
use glam::{Affine3A, Vec3};
use std::sync::Arc;
use support::{instance, light, material, mesh};

const RHO: f32 = 0.5;
const BOUNCES: u32 = 4;
const POWER: Vec3 = Vec3::new(12.0, 8.0, 4.0);

/// A closed 2×2×2 box of grey albedo ρ with a point light of power Φ inside, off centre.
fn white_box() -> Scene {
    let mut scene = Scene {
        camera: Camera {
            position: Vec3::new(0.0, 0.0, 0.9),
            look_at: Vec3::ZERO,
            fov_deg: 60.0,
            ..Default::default()
        },
        film: Film {
            width: 8,
            height: 8,
            spp: 1,
            integrator: caustica::scene::Integrator::Whitted,
            ..Default::default()
        },
        materials: vec![material(
            "white",
            MaterialKind::Diffuse {
                albedo: Vec3::splat(RHO),
                texture: None,
            },
        )],
        meshes: vec![mesh("box", shapes::box_mesh(Vec3::splat(2.0)))],
        instances: vec![instance(0, 0, Affine3A::IDENTITY)],
        lights: vec![light(LightKind::Point {
            position: Vec3::new(0.2, 0.3, -0.1),
            power: POWER,
        })],
        ..Default::default()
    };
    scene.photons.max_bounces = BOUNCES;
    scene
}

/// A glass sphere of radius 0.5 at height 1 over a large diffuse floor, lit by a point light
/// straight above.
fn glass_sphere_over_floor() -> Scene {
    let mut scene = Scene {
        camera: Camera {
            position: Vec3::new(0.0, 3.0, 3.0),
            look_at: Vec3::ZERO,
            fov_deg: 40.0,
            ..Default::default()
        },
        film: Film {
            width: 16,
            height: 16,
            spp: 1,
            integrator: caustica::scene::Integrator::Whitted,
            ..Default::default()
        },
        materials: vec![
            material(
                "floor",
                MaterialKind::Diffuse {
                    albedo: Vec3::splat(0.7),
                    texture: None,
                },
            ),
            material(
                "glass",
                MaterialKind::Dielectric {
                    ior: 1.5,
                    tint: Vec3::ONE,
                    fresnel: FresnelMode::Exact,
                    roughness: 0.0,
                },
            ),
        ],
        meshes: vec![
            mesh("floor", shapes::grid_quad(glam::Vec2::splat(8.0), [1, 1])),
            mesh("ball", shapes::uv_sphere(0.5, 96)),
        ],
        instances: vec![
            instance(0, 0, Affine3A::IDENTITY),
            instance(1, 1, Affine3A::from_translation(Vec3::new(0.0, 1.0, 0.0))),
        ],
        lights: vec![light(LightKind::Point {
            position: Vec3::new(0.0, 3.0, 0.0),
            power: Vec3::splat(50.0),
        })],
        ..Default::default()
    };
    scene.photons.max_bounces = 6;
    scene
}

/// Adds an emissive sphere of `radius` at `centre` to `scene` and makes it a light
/// ([`Scene::add_emissive_lights`]); returns that light's kind.
fn add_emissive_sphere(scene: &mut Scene, centre: Vec3, radius: f32, radiance: Vec3) -> LightKind {
    add_lamp(scene, centre, radius, radiance, false)
}

/// [`add_emissive_sphere`] with an analytic sphere: a sphere light ([`LightKind::Sphere`]).
fn add_analytic_lamp(scene: &mut Scene, centre: Vec3, radius: f32, radiance: Vec3) -> LightKind {
    let kind = add_lamp(scene, centre, radius, radiance, true);
    assert!(matches!(kind, LightKind::Sphere { .. }), "{kind:?}");
    kind
}

fn add_lamp(
    scene: &mut Scene,
    centre: Vec3,
    radius: f32,
    radiance: Vec3,
    analytic: bool,
) -> LightKind {
    scene.materials.push(material(
        "lamp",
        MaterialKind::Emissive {
            radiance,
            samples: 1,
        },
    ));
    let mut lamp = mesh("lamp", shapes::uv_sphere(radius, 24));
    if analytic {
        lamp.origin = MeshOrigin::AnalyticSphere { radius };
    }
    scene.meshes.push(lamp);
    scene.instances.push(instance(
        scene.meshes.len() as u32 - 1,
        scene.materials.len() as u32 - 1,
        Affine3A::from_translation(centre),
    ));
    let before = scene.lights.len();
    scene.add_emissive_lights();
    assert_eq!(scene.lights.len(), before + 1, "the sphere became a light");
    scene.lights[before].kind.clone()
}

/// A 16×8 sky: a blue gradient with one bright texel above the horizon, black below it,
/// turned 30° about +Y and scaled by 1.5.
fn sky_light() -> LightKind {
    let texels = (0..16 * 8)
        .map(|i: u32| {
            let (x, y) = (i % 16, i / 16);
            if (x, y) == (5, 1) {
                Vec3::new(40.0, 30.0, 20.0)
            } else if y < 4 {
                Vec3::new(0.2, 0.3, 0.5 + x as f32 * 0.02)
            } else {
                Vec3::ZERO
            }
        })
        .collect();
    let image = TextureImage {
        width: 16,
        height: 8,
        texels,
    };
    LightKind::Environment(Environment {
        map: Arc::new(EnvMap::new(&image)),
        scale: 1.5,
        to_world: glam::Mat3::from_rotation_y(30f32.to_radians()),
        samples: 1,
    })
}

fn prepared(scene: &Scene) -> Prepared {
    caustica::prepare(scene).expect("test scene builds")
}

/// `photons` photons of `pass` traced on the CPU twin with the default options.
fn cpu_map(scene: &Scene, pass: PhotonPass, photons: u32) -> PhotonMap {
    trace_photons(scene, &prepared(scene), &Default::default(), pass, photons)
}

fn power_of(records: &[PhotonRecord]) -> Vec3 {
    records.iter().map(|r| Vec3::from_array(r.power)).sum()
}

fn first_hits(records: &[PhotonRecord]) -> Vec<PhotonRecord> {
    records
        .iter()
        .filter(|r| r.flags & PHOTON_BOUNCES_MASK == 0)
        .copied()
        .collect()
}

/// Relative error of `got` against `want`, the largest over the channels.
fn relative_error(got: Vec3, want: Vec3) -> f32 {
    ((got - want).abs() / want).max_element()
}

/// The checks of the closed-box test on one map of `photons` emitted photons.
fn check_box_power(records: &[PhotonRecord], photons: u32, backend: &str) {
    // Every photon hits a wall first and is stored there with power Φ/N: the first hits carry
    // Φ up to float rounding.
    let first = power_of(&first_hits(records));
    assert!(
        relative_error(first, POWER) < 0.01,
        "{backend}: first-hit power {first} against Φ = {POWER}"
    );
    // Russian roulette by ρ keeps a survivor's power, so hits 1..B carry Φ·(1−ρ^B)/(1−ρ) in
    // expectation. The number of stored hits per photon K has variance ≈ 0.86 for ρ = ½, B = 4,
    // so the relative standard error of the mean over N photons is sqrt(0.86/N)/E[K]; allow 4.5σ.
    let expected = POWER * (1.0 - RHO.powi(BOUNCES as i32)) / (1.0 - RHO);
    let mean_k = (1.0 - RHO.powi(BOUNCES as i32)) / (1.0 - RHO);
    let tolerance = 4.5 * (0.86f32 / photons as f32).sqrt() / mean_k;
    let total = power_of(records);
    assert!(
        relative_error(total, expected) < tolerance,
        "{backend}: stored power {total} against Φ(1−ρ^B)/(1−ρ) = {expected} (tolerance {tolerance})"
    );
    assert!(records
        .iter()
        .all(|r| r.flags & PHOTON_BOUNCES_MASK < BOUNCES));
}

#[test]
fn closed_white_box_conserves_power_on_the_cpu() {
    let scene = white_box();
    let prepared = prepared(&scene);
    let photons = 40_000;
    let map = trace_photons(
        &scene,
        &prepared,
        &Default::default(),
        PhotonPass::Global,
        photons,
    );
    assert_eq!(map.stats.emitted, photons as u64);
    check_box_power(&map.records, photons, "cpu");
    // Every photon hits the box at least once; the mean path length is E[K].
    let mean_k = (1.0 - RHO.powi(BOUNCES as i32)) / (1.0 - RHO);
    assert!((map.stats.mean_path_length() as f32 - mean_k).abs() < 0.05);
}

#[test]
fn closed_white_box_conserves_power_on_the_gpu() {
    let Some(ctx) = test_context() else { return };
    let gpu = GpuBackend::new(Arc::new(ctx)).unwrap();
    let scene = white_box();
    let prepared = prepared(&scene);
    let photons = 40_000;
    let (records, stats) = gpu
        .trace_photons_vec(&scene, &prepared, PhotonPass::Global, photons)
        .unwrap();
    assert_eq!(stats.emitted, photons as u64);
    assert_eq!(stats.stored, records.len() as u64);
    check_box_power(&records, photons, "gpu");
}

/// The white box at albedo 0.95 with photons bouncing up to 8 times: about 6.7 stored photons
/// per emitted one.
fn bright_white_box() -> Scene {
    let mut scene = white_box();
    scene.materials[0].kind = MaterialKind::Diffuse {
        albedo: Vec3::splat(0.95),
        texture: None,
    };
    scene.photons.max_bounces = 8;
    scene
}

/// The GPU writes a pass's map into buffers kept between passes, sized at first for three
/// stored photons per emitted one. A box of albedo 0.95 stores about 6.7 per photon over 8
/// bounces, so the first trace outgrows them and is traced again into larger ones; the second
/// trace fits at once. Both must give the same map, bit for bit, and the map the CPU twin gives.
#[test]
fn a_photon_map_that_outgrows_its_first_buffers_is_traced_again_to_the_same_map() {
    let Some(ctx) = test_context() else { return };
    let gpu = GpuBackend::new(Arc::new(ctx)).unwrap();
    let scene = bright_white_box();
    let prepared = prepared(&scene);
    let photons = 20_000;
    let (first, first_stats) = gpu
        .trace_photons_vec(&scene, &prepared, PhotonPass::Global, photons)
        .unwrap();
    assert!(
        first_stats.stored > 3 * photons as u64,
        "the test needs a map larger than the first buffers: {} stored",
        first_stats.stored
    );
    let (second, second_stats) = gpu
        .trace_photons_vec(&scene, &prepared, PhotonPass::Global, photons)
        .unwrap();
    assert_eq!(first_stats.stored, second_stats.stored);
    assert_eq!(first_stats.hits, second_stats.hits);
    assert!(
        first == second,
        "the traced-again map differs from the one that fitted"
    );
    let cpu = trace_photons(
        &scene,
        &prepared,
        &Default::default(),
        PhotonPass::Global,
        photons,
    );
    assert_maps_pair_up(&cpu.records, &first);
}

/// A map must fit one storage binding: a pass that stores more photons than one holds is
/// refused with an error naming the map, the photons stored and emitted, the binding's size
/// and an emitted count that fits. The adapter's binding limit is lowered to 4 MiB (131,072
/// photons) so that a small pass of a bright closed box outgrows it.
#[test]
fn a_photon_map_larger_than_one_binding_is_refused_naming_the_photons_that_fit() {
    let Some(mut ctx) = test_context() else {
        return;
    };
    let limit = 4u64 << 20;
    ctx.info.max_storage_buffer_binding_size = limit;
    let gpu = GpuBackend::new(Arc::new(ctx)).unwrap();
    let scene = bright_white_box();
    let prepared = prepared(&scene);
    let err = gpu
        .trace_photons_vec(&scene, &prepared, PhotonPass::Global, 40_000)
        .expect_err("a map of about 270,000 photons is over the lowered limit");
    let message = err.to_string();
    let most = limit / std::mem::size_of::<PhotonRecord>() as u64;
    assert!(
        message.starts_with("the global photon map stores ")
            && message.contains(" photons of 40000 emitted, more than the 131072 that one storage binding of this adapter holds (4194304 bytes): emit at most about "),
        "{message}"
    );
    // The count it suggests stores, at the measured photons per emitted one, what fits.
    let stored: u64 = message["the global photon map stores ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let fits: u64 = message
        .rsplit("emit at most about ")
        .next()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(stored > most, "{message}");
    assert_eq!(fits, 40_000 * most / stored, "{message}");
}

/// Both backends stored the same number of photons to 1%, and more than 99% of their first
/// hits pair up.
fn assert_maps_pair_up(cpu: &[PhotonRecord], gpu: &[PhotonRecord]) {
    let (n_cpu, n_gpu) = (cpu.len() as f64, gpu.len() as f64);
    assert!(
        (n_cpu - n_gpu).abs() / n_cpu < 0.01,
        "{n_cpu} stored on the CPU, {n_gpu} on the GPU"
    );
    let fraction = matching_fraction(&first_hits(cpu), &first_hits(gpu), 1e-3);
    assert!(fraction > 0.99, "{fraction} of the first hits match");
}

/// The first hits of both maps, in photon order on both sides, pair up: the same random numbers
/// send the same photon to the same place, up to float rounding.
fn matching_fraction(a: &[PhotonRecord], b: &[PhotonRecord], tolerance: f32) -> f64 {
    let close = a
        .iter()
        .zip(b)
        .filter(|(x, y)| {
            Vec3::from_array(x.position).distance(Vec3::from_array(y.position)) < tolerance
                && x.direction.abs_diff(y.direction) < 1 << 17
        })
        .count();
    close as f64 / a.len().max(b.len()).max(1) as f64
}

#[test]
fn gpu_and_cpu_photon_maps_agree_in_the_glass_sphere_scene() {
    let Some(ctx) = test_context() else { return };
    let gpu = GpuBackend::new(Arc::new(ctx)).unwrap();
    // Under the point light, under a sun (its photons' directions spread over its disk), under
    // an emissive sphere (photons from points on its triangles), under a sky map (photons
    // from a disk beyond the scene, their directions chosen by the map's luminance) and under
    // an emissive analytic sphere.
    let point = glass_sphere_over_floor();
    let mut sun = glass_sphere_over_floor();
    sun.lights = vec![light(LightKind::Directional {
        direction: Vec3::new(0.2, -1.0, 0.1),
        irradiance: Vec3::splat(2.0),
        angle_deg: 4.0,
    })];
    let mut lamp = glass_sphere_over_floor();
    lamp.lights.clear();
    add_emissive_sphere(&mut lamp, Vec3::new(0.2, 3.0, 0.1), 0.2, Vec3::splat(20.0));
    let mut sky = glass_sphere_over_floor();
    sky.lights = vec![light(sky_light())];
    // Under an emissive analytic sphere: photons from points uniform over the sphere.
    let mut bulb = glass_sphere_over_floor();
    bulb.lights.clear();
    add_analytic_lamp(&mut bulb, Vec3::new(0.2, 3.0, 0.1), 0.2, Vec3::splat(20.0));
    for scene in [point, sun, lamp, sky, bulb] {
        photon_maps_agree(&gpu, &scene);
    }
}

fn photon_maps_agree(gpu: &GpuBackend, scene: &Scene) {
    let prepared = prepared(scene);
    let light = &scene.lights[0].kind;
    for pass in [PhotonPass::Global, PhotonPass::Caustic] {
        let photons = 20_000;
        let cpu: PhotonMap = trace_photons(scene, &prepared, &Default::default(), pass, photons);
        let (records, stats) = gpu
            .trace_photons_vec(scene, &prepared, pass, photons)
            .unwrap();
        let name = format!("{} {light:?}", pass.name());
        let (n_cpu, n_gpu) = (cpu.records.len() as f64, records.len() as f64);
        assert!(n_cpu > 1000.0, "{name}: {n_cpu} photons stored");
        assert!(
            (n_cpu - n_gpu).abs() / n_cpu < 0.01,
            "{name}: {n_cpu} stored on the CPU, {n_gpu} on the GPU"
        );
        assert!(relative_error(power_of(&records), cpu.total_power()) < 0.01);
        assert!((stats.mean_path_length() - cpu.stats.mean_path_length()).abs() < 0.02);
        let fraction = matching_fraction(&first_hits(&cpu.records), &first_hits(&records), 1e-3);
        if pass == PhotonPass::Global {
            assert!(
                fraction > 0.99,
                "{name}: {fraction} of the first hits match"
            );
        }
        // The caustic map's photons all came through the glass.
        if pass == PhotonPass::Caustic {
            for r in cpu.records.iter().chain(&records) {
                assert!(r.flags & PHOTON_SPECULAR_PATH != 0 && r.flags & PHOTON_BOUNCES_MASK > 0);
            }
            let fraction = matching_fraction(&cpu.records, &records, 1e-3);
            assert!(
                fraction > 0.95,
                "{name}: {fraction} of the caustic photons match"
            );
        }
    }
}

/// Photons per unit area of the floor within `r` of the axis under the sphere.
fn density_within(records: &[PhotonRecord], r0: f32, r1: f32) -> f64 {
    let count = records
        .iter()
        .filter(|p| {
            let d = glam::Vec2::new(p.position[0], p.position[2]).length();
            p.position[1].abs() < 1e-3 && d >= r0 && d < r1
        })
        .count();
    count as f64 / (std::f64::consts::PI * (r1 as f64 * r1 as f64 - r0 as f64 * r0 as f64))
}

#[test]
fn a_glass_sphere_focuses_caustic_photons_under_it() {
    let map = cpu_map(&glass_sphere_over_floor(), PhotonPass::Caustic, 200_000);
    // A ball lens of radius 0.5 and index 1.5 has a focal length of nR/2(n−1) = 0.75 from its
    // centre; with the light 2 m above the centre the image forms 1/(1/0.75 − 1/2) = 1.2 m below
    // it, close to the floor 1 m below: the photons crowd into a small spot under the sphere,
    // far denser than the ring around it.
    let core = density_within(&map.records, 0.0, 0.1);
    let ring = density_within(&map.records, 0.3, 0.6);
    assert!(core > 10.0 * ring, "core {core}/m², ring {ring}/m²");
}

/// The glass sphere scene with the sphere's material made rough (`roughness`), or rough gold.
fn rough_sphere_over_floor(gold: bool, roughness: f32) -> Scene {
    let mut scene = glass_sphere_over_floor();
    scene.materials[1].kind = if gold {
        MaterialKind::Conductor {
            eta: Vec3::new(0.143, 0.375, 1.442),
            k: Vec3::new(3.983, 2.386, 1.603),
            tint: Vec3::ONE,
            roughness,
            texture: None,
        }
    } else {
        MaterialKind::Dielectric {
            ior: 1.5,
            tint: Vec3::ONE,
            fresnel: FresnelMode::Exact,
            roughness,
        }
    };
    scene
}

/// Caustics through rough glass still work: photons that crossed a frosted ball are caustic
/// photons (their paths count as specular), and they still gather under it, though less
/// sharply than through smooth glass.
#[test]
fn a_rough_glass_sphere_still_focuses_caustic_photons_under_it_less_sharply() {
    let core = |roughness: f32| {
        let map = cpu_map(
            &rough_sphere_over_floor(false, roughness),
            PhotonPass::Caustic,
            200_000,
        );
        (
            density_within(&map.records, 0.0, 0.1),
            density_within(&map.records, 0.3, 0.6),
        )
    };
    let (smooth, _) = core(0.0);
    let (frosted, ring) = core(0.3);
    assert!(frosted > 3.0 * ring, "core {frosted}/m², ring {ring}/m²");
    assert!(
        frosted < 0.8 * smooth,
        "frosted {frosted}/m², smooth {smooth}/m²"
    );
}

/// The glass sphere scene over a floor of plastic (`roughness` of its coat): photons are
/// stored on it as on a diffuse floor and leave it by its coat or its base.
fn glass_sphere_over_plastic(roughness: f32) -> Scene {
    let mut scene = glass_sphere_over_floor();
    scene.materials[0].kind = MaterialKind::plastic(Vec3::splat(0.7), None, 1.5, roughness);
    scene
}

#[test]
fn gpu_and_cpu_photon_maps_agree_through_rough_glass_off_rough_gold_and_on_plastic() {
    let Some(ctx) = test_context() else { return };
    let gpu = GpuBackend::new(Arc::new(ctx)).unwrap();
    for scene in [
        rough_sphere_over_floor(false, 0.3),
        rough_sphere_over_floor(true, 0.3),
        glass_sphere_over_plastic(0.0),
        glass_sphere_over_plastic(0.4),
    ] {
        photon_maps_agree(&gpu, &scene);
    }
}

/// A plastic floor keeps the photons a diffuse one would (every global photon's first hit,
/// the glass's caustic), and its coat sends a share of them on as specular paths: the global
/// map holds photons that left the floor, as over a diffuse floor, with no fewer stored.
#[test]
fn a_plastic_floor_stores_photons_like_a_diffuse_one() {
    let count = |scene: &Scene, pass| cpu_map(scene, pass, 50_000).records.len();
    let diffuse = glass_sphere_over_floor();
    let plastic = glass_sphere_over_plastic(0.3);
    for pass in [PhotonPass::Global, PhotonPass::Caustic] {
        let (d, p) = (count(&diffuse, pass), count(&plastic, pass));
        assert!(
            p > 0 && (p as f64) > 0.5 * d as f64,
            "{pass:?}: {p} against {d}"
        );
    }
}

/// The power of the `L S+ D` photons a global pass stores (uniform emission).
fn caustic_power_in_global_map(records: &[PhotonRecord]) -> Vec3 {
    records
        .iter()
        .filter(|r| r.flags & PHOTON_SPECULAR_PATH != 0 && r.flags & PHOTON_BOUNCES_MASK > 0)
        .map(|r| Vec3::from_array(r.power))
        .sum()
}

#[test]
fn aimed_caustic_photons_carry_the_same_power_as_uniformly_emitted_ones_for_every_light_type() {
    let lights = [
        LightKind::Point {
            position: Vec3::new(0.3, 3.0, 0.2),
            power: Vec3::splat(50.0),
        },
        LightKind::Spot {
            position: Vec3::new(0.3, 3.0, 0.2),
            direction: Vec3::new(-0.1, -1.0, 0.0),
            power: Vec3::splat(50.0),
            cone_inner_deg: 10.0,
            cone_outer_deg: 25.0,
        },
        LightKind::Quad {
            corner: Vec3::new(-0.5, 3.0, -0.5),
            // Facing down: edge_u × edge_v = −y.
            edge_u: Vec3::new(1.0, 0.0, 0.0),
            edge_v: Vec3::new(0.0, 0.0, 1.0),
            radiance: Vec3::splat(10.0),
            samples: 1,
        },
        LightKind::Directional {
            direction: Vec3::new(0.2, -1.0, 0.1),
            irradiance: Vec3::splat(2.0),
            angle_deg: 0.0,
        },
        // A sun of a large disk, whose aimed photons stray furthest from their targets.
        LightKind::Directional {
            direction: Vec3::new(0.2, -1.0, 0.1),
            irradiance: Vec3::splat(2.0),
            angle_deg: 8.0,
        },
        // A sky, black below the horizon, whose aimed photons each take their own direction.
        sky_light(),
    ];
    let mut with_lamp = glass_sphere_over_floor();
    with_lamp.lights.clear();
    let lamp = add_emissive_sphere(
        &mut with_lamp,
        Vec3::new(0.2, 3.0, 0.1),
        0.2,
        Vec3::splat(20.0),
    );
    let scenes = lights
        .into_iter()
        .map(|kind| {
            let mut scene = glass_sphere_over_floor();
            scene.lights = vec![light(kind.clone())];
            (kind, scene)
        })
        .chain([(lamp, with_lamp)]);
    for (kind, scene) in scenes {
        let prepared = prepared(&scene);
        let vd = Default::default();
        let global = trace_photons(&scene, &prepared, &vd, PhotonPass::Global, 400_000);
        let caustic = trace_photons(&scene, &prepared, &vd, PhotonPass::Caustic, 100_000);
        let uniform = caustic_power_in_global_map(&global.records);
        let aimed = caustic.total_power();
        // The global map's estimate rests on a few thousand photons through the sphere
        // (relative standard error ≈ 2%); the aimed one on ~100,000.
        let sent = global
            .records
            .iter()
            .filter(|r| r.flags & PHOTON_SPECULAR_PATH != 0 && r.flags & PHOTON_BOUNCES_MASK > 0)
            .count();
        let tolerance = 4.0 / (sent as f32).sqrt() + 0.01;
        assert!(
            relative_error(aimed, uniform) < tolerance,
            "{kind:?}: aimed {aimed}, uniform {uniform} ({sent} photons, tolerance {tolerance})"
        );
        // Aiming wastes few photons: most of those that leave a point facing the glass sphere
        // make it into the map. Every point of a flat or point light faces it; of a spherical
        // lamp only the part of its area whose front sees the sphere's centre; of a sun, whose
        // aimed disk is grown by how far its directions stray, the sphere's share of that disk.
        let facing = match &kind {
            LightKind::Directional { angle_deg, .. } => {
                let (_, radius) = caustica::render::photons::scene_sphere(&prepared);
                let cos_max = caustica::scene::directional_cos_max(*angle_deg);
                let disk = caustica::scene::directional_disk_radius(radius, cos_max);
                let tan_max = (1.0 - cos_max * cos_max).sqrt() / cos_max;
                let r = 0.5 * 1.001;
                let grown = r + (2.02 * disk + r) * tan_max;
                (r / grown).powi(2)
            }
            LightKind::Mesh { emitter, .. } => {
                let centre = Vec3::new(0.0, 1.0, 0.0);
                let mut area = 0.0;
                for t in &emitter.triangles {
                    let middle = t.p0 + (t.e1 + t.e2) / 3.0;
                    if t.normal.dot(centre - middle) > 0.0 {
                        area += 0.5 * t.e1.cross(t.e2).length();
                    }
                }
                area / emitter.area
            }
            _ => 1.0,
        };
        assert!(
            caustic.records.len() as f32 > 50_000.0 * facing,
            "{kind:?}: {} of 100000 stored, {facing} of the light facing the sphere",
            caustic.records.len()
        );
    }
}

/// Under a uniform sky of radiance L a flat, two-sided floor of area A alone in the scene takes
/// irradiance πL on each side: the photons that hit it first carry 2πLA between them. The
/// photons leave a disk the size of the scene's sphere, beyond the scene, in directions chosen
/// by the map (relative deviation of the sum ≈ 0.5% with 100,000 photons, a third of them on
/// the floor; 2% allowed).
#[test]
fn photons_from_a_uniform_sky_bring_two_pi_l_a_to_a_lone_floor_on_both_backends() {
    let gpu = test_context().map(|ctx| GpuBackend::new(Arc::new(ctx)).unwrap());
    let radiance = Vec3::new(1.0, 2.0, 3.0);
    let mut scene = glass_sphere_over_floor();
    scene.instances.truncate(1);
    scene.lights = vec![light(LightKind::Environment(Environment {
        map: Arc::new(EnvMap::uniform(radiance)),
        scale: 0.5,
        to_world: glam::Mat3::IDENTITY,
        samples: 1,
    }))];
    let prepared = prepared(&scene);
    let (lo, hi) = prepared.world_bounds();
    let area = (hi.x - lo.x) * (hi.z - lo.z);
    assert!(hi.y - lo.y < 1e-3, "the scene is the floor alone");
    let expected = 2.0 * std::f32::consts::PI * 0.5 * radiance * area;
    let first_hits = |records: &[PhotonRecord]| -> Vec3 {
        records
            .iter()
            .filter(|r| r.flags & PHOTON_BOUNCES_MASK == 0)
            .map(|r| Vec3::from_array(r.power))
            .sum()
    };
    let photons = 100_000;
    let cpu = trace_photons(
        &scene,
        &prepared,
        &Default::default(),
        PhotonPass::Global,
        photons,
    );
    let on_floor = first_hits(&cpu.records);
    assert!(
        relative_error(on_floor, expected) < 0.02,
        "CPU: {on_floor} on the floor, expected {expected}"
    );
    if let Some(gpu) = gpu {
        let (records, _) = gpu
            .trace_photons_vec(&scene, &prepared, PhotonPass::Global, photons)
            .unwrap();
        let on_floor = first_hits(&records);
        assert!(
            relative_error(on_floor, expected) < 0.02,
            "GPU: {on_floor} on the floor, expected {expected}"
        );
    }
}

#[test]
fn every_light_inside_a_closed_box_puts_its_emitted_power_on_the_first_hits_on_both_backends() {
    let gpu = test_context().map(|ctx| GpuBackend::new(Arc::new(ctx)).unwrap());
    let lights = [
        LightKind::Spot {
            position: Vec3::new(0.1, 0.8, 0.0),
            direction: Vec3::new(0.2, -1.0, 0.1),
            power: Vec3::new(30.0, 20.0, 10.0),
            cone_inner_deg: 15.0,
            cone_outer_deg: 40.0,
        },
        LightKind::Quad {
            corner: Vec3::new(-0.3, 0.9, -0.2),
            edge_u: Vec3::new(0.6, 0.0, 0.0),
            edge_v: Vec3::new(0.0, 0.0, 0.4),
            radiance: Vec3::new(5.0, 4.0, 3.0),
            samples: 1,
        },
        LightKind::Point {
            position: Vec3::new(-0.4, 0.0, 0.5),
            power: Vec3::new(1.0, 2.0, 3.0),
        },
    ];
    let mut with_lamp = white_box();
    with_lamp.lights.clear();
    let lamp = add_emissive_sphere(
        &mut with_lamp,
        Vec3::new(0.3, -0.2, 0.1),
        0.25,
        Vec3::new(3.0, 2.0, 1.0),
    );
    let mut with_bulb = white_box();
    with_bulb.lights.clear();
    let bulb = add_analytic_lamp(
        &mut with_bulb,
        Vec3::new(-0.3, 0.2, -0.1),
        0.3,
        Vec3::new(1.0, 2.0, 3.0),
    );
    let scenes = lights
        .into_iter()
        .map(|kind| {
            let mut scene = white_box();
            scene.lights = vec![light(kind.clone())];
            (kind, scene)
        })
        .chain([(lamp, with_lamp), (bulb, with_bulb)]);
    for (kind, scene) in scenes {
        let prepared = prepared(&scene);
        let (_, radius) = caustica::render::photons::scene_sphere(&prepared);
        let want = caustica::render::photons::light_power(&kind, radius);
        let cpu = trace_photons(
            &scene,
            &prepared,
            &Default::default(),
            PhotonPass::Global,
            50_000,
        );
        let mut maps = vec![("cpu", cpu.records)];
        if let Some(gpu) = &gpu {
            let (records, _) = gpu
                .trace_photons_vec(&scene, &prepared, PhotonPass::Global, 50_000)
                .unwrap();
            maps.push(("gpu", records));
        }
        for (backend, records) in maps {
            // The spot's photons carry its falloff, so their sum is exact only in
            // expectation: 1% is about 4σ for 50,000 photons.
            let got = power_of(&first_hits(&records));
            assert!(
                relative_error(got, want) < 0.01,
                "{backend} {kind:?}: {got} on the first hits, the light emits {want}"
            );
        }
    }
}

/// The centroid (in pixels) and sum of the pixels of `view` above `fraction` of its maximum.
fn bright_spot(view: &[f32], width: usize, fraction: f32) -> (f32, f32, f32) {
    let max = view.iter().copied().fold(0.0f32, f32::max);
    let (mut sx, mut sy, mut sw) = (0.0, 0.0, 0.0);
    for (i, &v) in view.iter().enumerate() {
        if v > fraction * max {
            sx += (i % width) as f32 * v;
            sy += (i / width) as f32 * v;
            sw += v;
        }
    }
    (sx / sw, sy / sw, max)
}

#[test]
fn the_caustic_layer_shows_the_focused_spot_where_the_cpu_twin_does() {
    let mut scene = glass_sphere_over_floor();
    scene.film.width = 48;
    scene.film.height = 48;
    scene.photons.caustic = 60_000;
    scene.photons.knn = 32;
    scene.output.layers = vec![caustica::scene::Aov::PhotonsCaustic];
    let prepared = prepared(&scene);
    let cpu = caustica::cpu::render_whitted(&scene, &prepared, &Default::default());
    let layer = |frame: &caustica::render::Frame| -> Vec<f32> {
        let l = frame
            .aov("photons_caustic")
            .expect("the layer was requested");
        (0..l.pixels.len() / 3).map(|i| l.get(i, 1)).collect()
    };
    let cpu_view = layer(&cpu);
    // The spot under the sphere: the floor point (0, 0, 0) is the image centre.
    let (x, y, peak) = bright_spot(&cpu_view, 48, 0.5);
    assert!(
        (x - 23.5).abs() < 3.0 && (y - 23.5).abs() < 3.0,
        "cpu spot at ({x}, {y})"
    );
    let mean = cpu_view.iter().sum::<f32>() / cpu_view.len() as f32;
    assert!(peak > 20.0 * mean, "peak {peak}, mean {mean}");
    let stats: std::collections::HashMap<_, _> = cpu.metadata.stats.entries().into_iter().collect();
    assert!(stats["photons/caustic_stored"] > 30_000.0);
    assert!(stats["knn/caustic_queries"] > 0.0);
    let Some(ctx) = test_context() else { return };
    let gpu = GpuBackend::new(Arc::new(ctx)).unwrap();
    let frame = gpu.render(&scene, &prepared, &Default::default()).unwrap();
    let gpu_view = layer(&frame);
    let (gx, gy, gpeak) = bright_spot(&gpu_view, 48, 0.5);
    assert!(
        (gx - x).abs() < 1.0 && (gy - y).abs() < 1.0,
        "gpu spot at ({gx}, {gy}), cpu at ({x}, {y})"
    );
    assert!((gpeak / peak - 1.0).abs() < 0.1, "peaks {gpeak} and {peak}");
    // Photon by photon the maps match up to rounding, so the views agree closely.
    let total: f32 = cpu_view.iter().sum();
    let diff: f32 = cpu_view
        .iter()
        .zip(&gpu_view)
        .map(|(a, b)| (a - b).abs())
        .sum();
    assert!(diff < 0.05 * total, "|gpu − cpu| = {diff} of {total}");
}

#[test]
fn photons_meet_vd_patches_at_the_frames_levels_on_both_backends() {
    let Some(ctx) = test_context() else { return };
    let gpu = GpuBackend::new(Arc::new(ctx)).unwrap();
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let file = caustica::load_scene(&root.join("scenes/vd_patches.csc")).unwrap();
    let assets = caustica::io::AssetCache::default();
    let overrides = caustica::Overrides {
        resolution: Some((40, 30)),
        spp: Some(1),
        ..Default::default()
    };
    let scene = caustica::evaluate_frame(&file, 1, &assets, &overrides).unwrap();
    let prepared = prepared(&scene);
    assert!(!prepared.vd_patches.is_empty());
    // The CPU twin's levels come from the same camera samples as the GPU's.
    let tracer = caustica::cpu::whitted::Tracer::new(&scene, &prepared);
    let cpu = trace_photons(&scene, &prepared, &tracer.vd, PhotonPass::Global, 20_000);
    let (records, _) = gpu
        .trace_photons_vec(&scene, &prepared, PhotonPass::Global, 20_000)
        .unwrap();
    // Photons stored on the displaced surfaces (above the ground) pair up too.
    assert_maps_pair_up(&cpu.records, &records);
    let on_patches = first_hits(&cpu.records)
        .iter()
        .filter(|r| r.position[1] > 0.01)
        .count();
    assert!(
        on_patches > 300,
        "{on_patches} first hits on the VD patches"
    );
}

#[test]
fn gpu_knn_over_a_gpu_built_tree_equals_brute_force_on_the_example_scenes_photons() {
    let Some(ctx) = test_context() else { return };
    let builder = caustica::gpu::kdtree::KdTreeBuilder::new(&ctx).unwrap();
    let knn = caustica::gpu::knn::KnnQueries::new(&ctx).unwrap();
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let assets = caustica::io::AssetCache::default();
    for (file, pass) in [
        ("scenes/cornell_spheres.csc", PhotonPass::Global),
        ("scenes/cornell_spheres.csc", PhotonPass::Caustic),
        ("scenes/cornell_point.csc", PhotonPass::Global),
    ] {
        let scene_file = caustica::load_scene(&root.join(file)).unwrap();
        let scene = caustica::evaluate_frame(&scene_file, 1, &assets, &Default::default()).unwrap();
        let prepared = prepared(&scene);
        let map = trace_photons(&scene, &prepared, &Default::default(), pass, 8_000);
        let points = map.points();
        assert!(points.len() > 4_000, "{file}: {} photons", points.len());
        let tree = builder.build_vec(&ctx, &points).unwrap();
        caustica::accel::kdtree::validate_point_kdtree(&tree.words, &points).unwrap();
        let gpu_tree =
            caustica::gpu::kdtree::GpuKdTree::upload(&ctx, &tree.words, &points).unwrap();
        // Queries at photons (exact duplicates of a point: ties) and jittered beside them.
        let mut rng = support::LcgRng(7);
        let queries: Vec<Vec3> = points
            .iter()
            .step_by(16)
            .flat_map(|p| {
                let p = Vec3::new(p[0], p[1], p[2]);
                [p, p + (rng.unit_vector() * 0.02)]
            })
            .collect();
        for (k, max_dist2) in [(64u32, f32::INFINITY), (16, 0.01)] {
            let got = knn
                .knn_vec(&ctx, &gpu_tree, &queries, k, max_dist2)
                .unwrap();
            for (q, found) in queries.iter().zip(&got) {
                let want =
                    caustica::accel::knn::knn_brute_force(&points, *q, k as usize, max_dist2);
                // As sets of indices (the brute force breaks ties by index).
                let mut ids: Vec<u32> = found.iter().map(|n| n.index).collect();
                let mut want_ids: Vec<u32> = want.iter().map(|n| n.index).collect();
                ids.sort_unstable();
                want_ids.sort_unstable();
                assert_eq!(ids, want_ids, "{file} {}: query {q}, k {k}", pass.name());
            }
        }
    }
}
