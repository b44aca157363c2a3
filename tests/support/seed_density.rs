//! What the seed density test (`tests/seed_density.rs`) and its benchmark
//! (`benches/seed_density.rs`) share: the cut-down photon-mapped Cornell box, its ceiling's
//! pixels and seeds, the seeds its minimum density guarantees, and the box in a larger scene,
//! where the seeding by errors alone starves the ceiling.
#![allow(dead_code)]

use caustica::cpu::gather::{quadtree_code, seed_density_floor};
use caustica::render::gather::seed_min_density_fixed;
use caustica::render::Frame;
use caustica::scene::{Aov, Integrator, LightKind, Scene};

/// The Cornell box with mirror and glass spheres at `size`², `spp` samples per pixel, photon
/// mapped with `seeds` seeds over `levels` quadtree levels and the minimum density
/// `min_density`. What the seeds do not depend on is cut down: one shadow ray per point,
/// `rays` gather rays, `photons` global photons and no caustic ones.
#[allow(clippy::too_many_arguments)]
pub fn cornell(
    size: u32,
    spp: u32,
    seeds: u32,
    levels: u32,
    rays: u32,
    photons: u32,
    min_density: f32,
    film_seed: u64,
) -> Scene {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let file = caustica::load_scene(&root.join("scenes/cornell_spheres.csc")).unwrap();
    let assets = caustica::io::AssetCache::default();
    let overrides = caustica::Overrides {
        resolution: Some((size, size)),
        spp: Some(spp),
        seed: Some(film_seed),
        integrator: Some(Integrator::PhotonMap),
        layers: Some(vec![Aov::Albedo, Aov::Normal, Aov::Indirect, Aov::Seeds]),
        ..Default::default()
    };
    let mut scene = caustica::evaluate_frame(&file, 1, &assets, &overrides).unwrap();
    for light in &mut scene.lights {
        if let LightKind::Quad { samples, .. } = &mut light.kind {
            *samples = 1;
        }
    }
    scene.photons.global = photons;
    scene.photons.caustic = 0;
    scene.gather.seeds = seeds;
    scene.gather.rays = rays;
    scene.gather.quadtree_levels = levels;
    scene.gather.min_density = min_density;
    scene
}

/// `scene` rendered by the CPU's Whitted tracer with its photon-mapped gather.
pub fn render(scene: &Scene) -> Frame {
    let prepared = caustica::prepare(scene).unwrap();
    caustica::cpu::render_whitted(scene, &prepared, &Default::default())
}

/// Pixels whose every sample's first hit is the white ceiling (normal (0, −1, 0), albedo 0.73):
/// each holds exactly `spp` shading points, all on the ceiling.
pub fn ceiling_pixels(frame: &Frame) -> Vec<bool> {
    let normal = frame.aov("Ns").unwrap();
    let albedo = frame.aov("Albedo").unwrap();
    (0..frame.color.len())
        .map(|i| normal.get(i, 1) < -0.9999 && (albedo.get(i, 0) - 0.73).abs() < 1e-4)
        .collect()
}

/// The seeds (the `seeds` layer) on the pixels `pixels` marks.
pub fn seeds_on(frame: &Frame, pixels: &[bool]) -> u32 {
    let seeds = frame.aov("seeds").unwrap();
    (0..pixels.len())
        .filter(|&i| pixels[i])
        .map(|i| seeds.get(i, 0) as u32)
        .sum()
}

/// The statistic `name` of `frame`'s metadata (panics when it has none).
pub fn stat(frame: &Frame, name: &str) -> f64 {
    frame
        .metadata
        .stat(name)
        .unwrap_or_else(|| panic!("no statistic {name}"))
}

/// The seeds the minimum density guarantees to the ceiling, from the seeding's rule
/// (`cpu::gather::split_seeds`): every quadtree node of `P` of the `n` points holds at least its
/// floor `seed_density_floor(T, P, n, β)` of the `T` seeds, so the ceiling holds at least the
/// sum of the floors of the largest quadtree nodes made of ceiling pixels only.
pub fn guaranteed_ceiling_seeds(
    ceiling: &[bool],
    size: u32,
    levels: u32,
    spp: u32,
    points: u32,
    seeds: u32,
    min_density: f32,
) -> u32 {
    ceiling_nodes(ceiling, size, levels)
        .iter()
        .map(|&(_, pixels)| {
            seed_density_floor(
                seeds.min(points),
                pixels * spp,
                points,
                seed_min_density_fixed(min_density),
            )
        })
        .sum()
}

/// The largest quadtree nodes made of ceiling pixels only, as (depth, pixels).
pub fn ceiling_nodes(ceiling: &[bool], size: u32, levels: u32) -> Vec<(u32, u32)> {
    let codes: Vec<u32> = (0..size * size)
        .map(|p| quadtree_code(p, size, size, levels))
        .collect();
    let mut taken = vec![false; ceiling.len()];
    let mut chosen = Vec::new();
    for depth in 1..=levels {
        let shift = 2 * (levels - depth);
        // Per node prefix: (pixels, ceiling pixels not yet in a chosen node).
        let mut nodes = std::collections::BTreeMap::<u32, (u32, u32)>::new();
        for (p, &code) in codes.iter().enumerate() {
            let e = nodes.entry(code >> shift).or_default();
            e.0 += 1;
            if ceiling[p] && !taken[p] {
                e.1 += 1;
            }
        }
        for (p, &code) in codes.iter().enumerate() {
            let (pixels, free) = nodes[&(code >> shift)];
            if pixels == free {
                taken[p] = true;
            }
        }
        for (&_, &(pixels, free)) in &nodes {
            if pixels == free {
                chosen.push((depth, pixels));
            }
        }
    }
    chosen
}

/// The ceiling's indirect radiance per ceiling pixel and its seeds, in the Cornell box of
/// [`cornell`] at 64², 4 samples, 128 gather rays, 20000 photons, 6 levels, with a copy of the
/// floor 40 units below it: the scene's radius grows about twelvefold and α of eq. 6.1 shrinks
/// as much, so positions count little against normals and the seeding by errors alone starves
/// the flat ceiling (the case of a room seen in a larger scene).
pub fn large_scene_ceiling(
    seeds: u32,
    min_density: f32,
    film_seed: u64,
) -> (Vec<f64>, u32, Vec<glam::Vec3>) {
    let mut scene = cornell(64, 4, seeds, 6, 128, 20000, min_density, film_seed);
    let mut far = scene.instances[0].clone();
    far.transform =
        glam::Affine3A::from_translation(glam::Vec3::new(0.0, -40.0, 0.0)) * far.transform;
    scene.instances.push(far);
    let frame = render(&scene);
    let ceiling = ceiling_pixels(&frame);
    let indirect = frame.aov("indirect").unwrap();
    let values = (0..ceiling.len())
        .filter(|&i| ceiling[i])
        .map(|i| (indirect.get(i, 0) + indirect.get(i, 1) + indirect.get(i, 2)) as f64)
        .collect();
    (values, seeds_on(&frame, &ceiling), frame.color)
}

/// The per-pixel RMS of the relative differences of `values` from `reference`.
pub fn relative_rms(values: &[f64], reference: &[f64]) -> f64 {
    assert_eq!(values.len(), reference.len(), "the same ceiling pixels");
    (values
        .iter()
        .zip(reference)
        .map(|(v, r)| (v / r - 1.0).powi(2))
        .sum::<f64>()
        / values.len() as f64)
        .sqrt()
}
