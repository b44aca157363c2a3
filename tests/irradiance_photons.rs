//! Christensen's precomputed irradiance (`gather { precomputed_irradiance }`): a gather hit
//! takes the irradiance of the nearest irradiance photon whose normal agrees with its own, so
//! light never leaks round a corner from the wall beside it; on a uniformly lit plane the
//! lookups average to the full density estimate's irradiance; and the GPU's lookups
//! (`gpu::irradiance_photons`) equal the CPU twin's (`cpu::irradiance_photons`) on the same
//! photons.

mod support;

use caustica::accel::photon_estimate::{
    coarse_octahedral_encode, octahedral_encode, EstimateFilter, PhotonRecord, PHOTON_NORMAL_SHIFT,
};
use caustica::cpu::irradiance_photons::IrradiancePhotons;
use caustica::cpu::photons::{PhotonMap, PhotonTree};
use caustica::gpu::irradiance_photons::IrradiancePhotonKernels;
use caustica::gpu::kdtree::KdTreeBuilder;
use caustica::gpu::test_context;
use caustica::render::photons::{EstimateSettings, PhotonPassStats};
use glam::Vec3;
use support::LcgRng;

/// `n` photons of `power` each, uniformly over the unit square of the plane through the origin
/// spanned by `u` and `v`, on the side of `normal`, travelling along `direction`.
fn square(
    rng: &mut LcgRng,
    n: usize,
    (u, v): (Vec3, Vec3),
    normal: Vec3,
    direction: Vec3,
    power: f32,
) -> Vec<PhotonRecord> {
    (0..n)
        .map(|_| {
            let p = u * rng.f32() + v * rng.f32();
            PhotonRecord {
                position: p.to_array(),
                direction: octahedral_encode(direction),
                power: [power; 3],
                flags: coarse_octahedral_encode(normal) << PHOTON_NORMAL_SHIFT,
            }
        })
        .collect()
}

/// A floor (y = 0, lit from above) meeting a wall (x = 0, lit from +x) along the z axis, the
/// wall's irradiance ten times the floor's; photons interleaved as a tracer would store them.
/// Each face's photons arrive from behind the other face's side (the floor's travel away from
/// the wall, the wall's upwards), so the density estimate itself never counts the other face's
/// photons: light from the wall on the floor could only come from the lookup.
fn corner(rng: &mut LcgRng, per_face: usize) -> (Vec<PhotonRecord>, f32, f32) {
    let floor = square(
        rng,
        per_face,
        (Vec3::X, Vec3::Z),
        Vec3::Y,
        Vec3::new(0.3, -1.0, 0.0),
        1e-4,
    );
    let wall = square(
        rng,
        per_face,
        (Vec3::Y, Vec3::Z),
        Vec3::X,
        Vec3::new(-1.0, 0.3, 0.0),
        1e-3,
    );
    let records = floor
        .into_iter()
        .zip(wall)
        .flat_map(|(a, b)| [a, b])
        .collect();
    // Irradiance = stored power per square metre.
    (records, per_face as f32 * 1e-4, per_face as f32 * 1e-3)
}

/// 40,000 photons of 10⁻⁴ W on the unit square of the floor, arriving straight down (`seed`
/// for their positions), and their count.
fn lit_floor(seed: u64) -> (Vec<PhotonRecord>, usize) {
    let per_face = 40_000;
    let mut rng = LcgRng(seed);
    let records = square(
        &mut rng,
        per_face,
        (Vec3::X, Vec3::Z),
        Vec3::Y,
        -Vec3::Y,
        1e-4,
    );
    (records, per_face)
}

fn tree(records: Vec<PhotonRecord>) -> PhotonTree {
    PhotonTree::build(PhotonMap {
        records,
        stats: PhotonPassStats::default(),
    })
}

/// k = 8 (the kind of k late progressive passes shrink to, where the estimates' biases show)
/// and no radius.
fn few_photons_no_radius() -> EstimateSettings {
    EstimateSettings {
        k: 8,
        max_dist2: f32::INFINITY,
        filter: EstimateFilter::None,
    }
}

fn settings(filter: EstimateFilter) -> EstimateSettings {
    EstimateSettings {
        k: 64,
        max_dist2: 0.1 * 0.1,
        filter,
    }
}

#[test]
fn a_lookup_beside_a_corner_takes_its_own_walls_irradiance_not_the_brighter_wall_beside_it() {
    let mut rng = LcgRng(0x0c0f_fee0);
    let (records, e_floor, e_wall) = corner(&mut rng, 20_000);
    let global = tree(records);
    // Every third photon: both faces' (they alternate in the map).
    let photons = IrradiancePhotons::precompute(&global, 3, &settings(EstimateFilter::None));
    for i in 0..200 {
        // Floor points within 2 cm of the wall, where the nearest irradiance photon is often
        // on the wall.
        let x = Vec3::new(
            0.0005 + 0.02 * (i as f32 / 200.0),
            0.0,
            0.2 + 0.6 * rng.f32(),
        );
        let e = photons.irradiance(x, Vec3::Y).x;
        // The floor's own estimate (halved at the very edge, where half the disc is off the
        // floor), never the wall's ten times brighter one.
        assert!(
            e > 0.3 * e_floor && e < 1.5 * e_floor,
            "at {x}: {e}, floor {e_floor}, wall {e_wall}"
        );
        // And the wall just above the floor keeps its own.
        let w = Vec3::new(0.0, x.x, x.z);
        let e = photons.irradiance(w, Vec3::X).x;
        assert!(e > 0.3 * e_wall && e < 1.5 * e_wall, "wall at {w}: {e}");
    }
}

#[test]
fn lookups_on_a_uniformly_lit_plane_average_to_the_density_estimates_irradiance() {
    let (records, per_face) = lit_floor(0x51de_0001);
    let want = per_face as f32 * 1e-4;
    let s = settings(EstimateFilter::None);
    let global = tree(records);
    let photons = IrradiancePhotons::precompute(&global, 4, &s);
    assert_eq!(photons.points.len(), per_face / 4);
    let (mut lookups, mut estimates) = (0.0f64, 0.0f64);
    let queries = 2000;
    let mut rng = LcgRng(0x51de_0002);
    for _ in 0..queries {
        // Away from the square's edges, where the estimate's disc is whole.
        let x = Vec3::new(0.2 + 0.6 * rng.f32(), 0.0, 0.2 + 0.6 * rng.f32());
        lookups += photons.irradiance(x, Vec3::Y).x as f64;
        estimates += global.flux_density(x, Vec3::Y, &s).x as f64;
    }
    let (lookups, estimates) = (lookups / queries as f64, estimates / queries as f64);
    // A k = 64 estimate's relative deviation is about 1/√63 ≈ 13%; the means of 2000 queries
    // (about 1000 distinct irradiance photons) are within 3% (several standard deviations).
    assert!(
        (lookups / estimates - 1.0).abs() < 0.03,
        "lookups {lookups}, estimates {estimates}"
    );
    assert!(
        (lookups / want as f64 - 1.0).abs() < 0.03,
        "lookups {lookups}, want {want}"
    );
}

#[test]
fn gpu_lookups_equal_the_cpu_twins_on_the_same_photons() {
    let Some(ctx) = test_context() else { return };
    let kernels = IrradiancePhotonKernels::new(&ctx).unwrap();
    let builder = KdTreeBuilder::new(&ctx).unwrap();
    let mut rng = LcgRng(0x7a1e_0002);
    let (records, _, _) = corner(&mut rng, 6_000);
    let mut queries = Vec::new();
    for _ in 0..1500 {
        queries.push((Vec3::new(0.03 * rng.f32(), 0.0, rng.f32()), Vec3::Y));
        queries.push((Vec3::new(0.0, 0.03 * rng.f32(), rng.f32()), Vec3::X));
        // Facing away from every photon: no agreeing normal, zero on both.
        queries.push((Vec3::new(0.5 * rng.f32(), 0.0, rng.f32()), -Vec3::Y));
    }
    // Far outside the radius: nothing found.
    queries.push((Vec3::splat(5.0), Vec3::Y));
    // Odd strides: both faces' photons (they alternate in the map).
    for (stride, filter) in [
        (3, EstimateFilter::None),
        (1, EstimateFilter::Cone { k: 1.1 }),
    ] {
        let s = settings(filter);
        let global = tree(records.clone());
        let cpu = IrradiancePhotons::precompute(&global, stride, &s);
        let gpu = kernels
            .lookup_vec(&ctx, &builder, &records, stride, &s, &queries)
            .unwrap();
        let mut differing = 0;
        let mut lit = 0;
        for (q, g) in queries.iter().zip(&gpu) {
            let c = cpu.irradiance(q.0, q.1);
            if c.x > 0.0 {
                lit += 1;
            }
            if q.1 == -Vec3::Y {
                assert_eq!(*g, Vec3::ZERO, "stride {stride}: facing away at {}", q.0);
            }
            // The same neighbours and the same estimate, up to the GPU's roundoff.
            if (*g - c).abs().max_element() > 1e-5 * c.max_element().max(1e-6) {
                differing += 1;
            }
        }
        assert_eq!(gpu[queries.len() - 1], Vec3::ZERO);
        assert!(lit >= 2 * 1500 - 10, "stride {stride}: {lit} lit lookups");
        // A lookup can differ only where a normal's cosine is within roundoff of the threshold
        // (none here: the normals are the axes) or a density sum rounds differently.
        assert!(
            differing <= queries.len() / 100,
            "stride {stride}: {differing} of {} lookups differ",
            queries.len()
        );
    }
}

/// An estimate centred on a photon always finds that photon; counted, it would make the
/// estimate (k − 1)/(k − 2) too bright: +17% at k = 8, the kind of k the progressive passes
/// shrink to. Left out (with every photon an irradiance photon, the estimate counts the others),
/// the precomputed irradiance of a uniformly lit plane is its irradiance.
#[test]
fn the_estimate_at_an_irradiance_photon_leaves_the_photons_own_power_out() {
    let (records, per_face) = lit_floor(0x5e1f_0003);
    let want = per_face as f64 * 1e-4;
    let s = few_photons_no_radius();
    let photons = IrradiancePhotons::precompute(&tree(records), 1, &s);
    let (mut sum, mut n) = (0.0f64, 0);
    for (p, e) in photons.points.iter().zip(&photons.irradiance) {
        if (0.1..0.9).contains(&p[0]) && (0.1..0.9).contains(&p[2]) {
            sum += e.x as f64;
            n += 1;
        }
    }
    let mean = sum / n as f64;
    // Each estimate deviates by about 1/√6 ≈ 41%; the mean of ~25,600 (overlapping) ones is
    // within 3%, far from the +17% of counting the photon itself.
    assert!((mean / want - 1.0).abs() < 0.03, "mean {mean}, want {want}");
}

/// A lookup takes the irradiance photon nearest the hit, so no irradiance photon lies closer to
/// the hit than the one taken: an estimate that counted irradiance photons would see that hole
/// and read dark. Counted from the other photons only (scaled by stride/(stride − 1)), the
/// lookups at random points of a uniformly lit plane average to its irradiance.
#[test]
fn lookups_at_random_points_are_not_darkened_by_the_hole_their_choice_makes() {
    let (records, per_face) = lit_floor(0x401e_0004);
    let want = per_face as f64 * 1e-4;
    let s = few_photons_no_radius();
    let photons = IrradiancePhotons::precompute(&tree(records), 2, &s);
    let mut rng = LcgRng(0x401e_0005);
    let queries = 20_000;
    let mut sum = 0.0f64;
    for _ in 0..queries {
        let x = Vec3::new(0.1 + 0.8 * rng.f32(), 0.0, 0.1 + 0.8 * rng.f32());
        sum += photons.irradiance(x, Vec3::Y).x as f64;
    }
    let mean = sum / queries as f64;
    // k = 8 estimates deviate by about 1/√7 ≈ 38%; the mean over 20,000 lookups (about 8,000
    // distinct irradiance photons) is within 2%.
    assert!((mean / want - 1.0).abs() < 0.02, "mean {mean}, want {want}");
}
