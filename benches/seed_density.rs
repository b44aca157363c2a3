//! The measurements behind the default minimum seed density (`gather { min_density }`, issue 12;
//! docs/architecture.md, "A minimum seed density", has the numbers), on the CPU: the Cornell
//! box's ceiling's seeds at the scene's own size (`counts`), its mean indirect radiance with 128
//! seeds against 2048 (`indirect`), the scene as it is against the Mitsuba reference
//! (`reference`), and a starved ceiling (the box in a larger scene) with 1024 seeds against 8192
//! (`starved`). Each prints its figures and its wall time; slow on a small CPU.
//!
//! `cargo bench --bench seed_density -- [--measurements counts,indirect,reference,starved] [--film-seeds 4]`

mod support;

use support::arg;

#[path = "../tests/support/seed_density.rs"]
mod seed_density_support;

use std::path::PathBuf;
use std::time::Instant;

use caustica::cpu::gather::quadtree_code;
use caustica::scene::{Aov, Integrator, DEFAULT_MIN_SEED_DENSITY};
use seed_density_support::{
    ceiling_pixels, cornell, guaranteed_ceiling_seeds, large_scene_ceiling, relative_rms, render,
    seeds_on, stat,
};

const MEASUREMENTS: [&str; 4] = ["counts", "indirect", "reference", "starved"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let chosen = arg(&args, "--measurements").unwrap_or_else(|| MEASUREMENTS.join(","));
    let film_seeds: u64 = arg(&args, "--film-seeds")
        .and_then(|r| r.parse().ok())
        .unwrap_or(4);
    for name in chosen.split(',').filter(|n| !n.is_empty()) {
        let start = Instant::now();
        match name {
            "counts" => ceiling_seed_counts_at_full_size(),
            "indirect" => ceiling_indirect_error_against_more_seeds(film_seeds),
            "reference" => ceiling_against_the_mitsuba_reference(),
            "starved" => starved_ceiling_error_against_more_seeds(film_seeds),
            other => {
                eprintln!(
                    "unknown measurement {other:?}; known: {}",
                    MEASUREMENTS.join(", ")
                );
                std::process::exit(2);
            }
        }
        println!("{name}: {:.1} s", start.elapsed().as_secs_f64());
    }
}

/// The measurement of issue 12 at the scene's own size (512², 4 samples, 8192 seeds, 8
/// levels, and 256² with 16 samples): the ceiling's seeds for several minimum densities, its
/// share of the points, the seeds guaranteed to it and those on its inside. A ceiling with
/// fewer seeds than guaranteed breaks the seeding's rule (pinned by `tests/seed_density.rs` at
/// 256², 1 sample) and stops the measurement.
fn ceiling_seed_counts_at_full_size() {
    let (seeds, levels) = (8192, 8);
    for (size, spp, min_density) in [
        (256, 16, 0.0),
        (256, 16, 0.25),
        (256, 16, 0.5),
        (512, 4, 0.0),
        (512, 4, 0.25),
        (512, 4, 0.5),
    ] {
        let frame = render(&cornell(size, spp, seeds, levels, 1, 2000, min_density, 0));
        let ceiling = ceiling_pixels(&frame);
        let points = stat(&frame, "gather/shading_points") as u32;
        let on_ceiling = seeds_on(&frame, &ceiling);
        let guaranteed =
            guaranteed_ceiling_seeds(&ceiling, size, levels, spp, points, seeds, min_density);
        let share = ceiling.iter().filter(|&&c| c).count() as f32 * spp as f32 / points as f32;
        let inside = ceiling_inside(&ceiling, size, levels);
        let inside_share =
            inside.iter().filter(|&&c| c).count() as f32 * spp as f32 / points as f32;
        println!(
            "{size}², {spp} spp, β = {min_density}: {on_ceiling} of {seeds} seeds on the \
             ceiling ({:.1}% of {points} points), {guaranteed} guaranteed; {} inside it \
             ({:.1}% of the points)",
            share * 100.0,
            seeds_on(&frame, &inside),
            inside_share * 100.0
        );
        assert!(
            on_ceiling >= guaranteed,
            "the minimum density's guarantee is broken: {on_ceiling} < {guaranteed}"
        );
    }
}

/// The pixels of the ceiling's inside: those in quadtree nodes of ceiling pixels only that are
/// at least 4 × 4 leaf cells (depth at most `levels − 2`), away from its edges.
fn ceiling_inside(ceiling: &[bool], size: u32, levels: u32) -> Vec<bool> {
    let codes: Vec<u32> = (0..size * size)
        .map(|p| quadtree_code(p, size, size, levels))
        .collect();
    let mut inside = vec![false; ceiling.len()];
    for depth in 1..=levels.saturating_sub(2) {
        let shift = 2 * (levels - depth);
        let mut all = std::collections::HashMap::<u32, bool>::new();
        for (p, &code) in codes.iter().enumerate() {
            *all.entry(code >> shift).or_insert(true) &= ceiling[p];
        }
        for (p, &code) in codes.iter().enumerate() {
            inside[p] |= all[&(code >> shift)];
        }
    }
    inside
}

/// The ceiling's mean indirect radiance (the `indirect` layer, summed over RGB) with `seeds`
/// seeds at the minimum density `min_density`, on a 48² image with 4 samples, 128 gather rays
/// and 20000 photons (the photons are the same for every seed count: they depend only on the
/// film seed).
fn ceiling_indirect(seeds: u32, min_density: f32, film_seed: u64) -> f64 {
    let frame = render(&cornell(
        48,
        4,
        seeds,
        5,
        128,
        20000,
        min_density,
        film_seed,
    ));
    let ceiling = ceiling_pixels(&frame);
    let indirect = frame
        .aov("indirect")
        .expect("cornell() asks for the indirect layer");
    let (mut sum, mut count) = (0.0, 0);
    for (i, &c) in ceiling.iter().enumerate() {
        if c {
            sum += (indirect.get(i, 0) + indirect.get(i, 1) + indirect.get(i, 2)) as f64;
            count += 1;
        }
    }
    sum / count as f64
}

/// The measurement of the ceiling's error: its mean indirect radiance with 128 seeds, without
/// and with the default minimum density, against 2048 seeds, for `film_seeds` film seeds.
fn ceiling_indirect_error_against_more_seeds(film_seeds: u64) {
    for film_seed in 0..film_seeds {
        let reference = ceiling_indirect(2048, 0.0, film_seed);
        let reference_default = ceiling_indirect(2048, DEFAULT_MIN_SEED_DENSITY, film_seed);
        let without = ceiling_indirect(128, 0.0, film_seed);
        let with = ceiling_indirect(128, DEFAULT_MIN_SEED_DENSITY, film_seed);
        println!(
            "film seed {film_seed}: reference {reference:.5} (β default: {reference_default:.5}); \
             128 seeds: β = 0 {:+.2}%, β = {DEFAULT_MIN_SEED_DENSITY} {:+.2}%",
            (without / reference - 1.0) * 100.0,
            (with / reference - 1.0) * 100.0
        );
    }
}

/// The measurement of issue 12 against the Mitsuba reference (`tests/reference.rs`'s render:
/// the scene as it is, 256², 16 samples): the whole image's relative MSE, the ceiling's mean
/// against the reference's and its seeds, for several minimum densities.
fn ceiling_against_the_mitsuba_reference() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let reference =
        caustica::io::read_frame(&root.join("tests/data/reference/cornell_spheres_256.exr"))
            .expect("the committed reference");
    let file = caustica::load_scene(&root.join("scenes/cornell_spheres.csc"))
        .expect("scenes/cornell_spheres.csc loads");
    let assets = caustica::io::AssetCache::default();
    let overrides = caustica::Overrides {
        resolution: Some((256, 256)),
        spp: Some(16),
        integrator: Some(Integrator::PhotonMap),
        layers: Some(vec![Aov::Albedo, Aov::Normal, Aov::Seeds]),
        ..Default::default()
    };
    for min_density in [0.0, 0.1, 0.25, 0.5] {
        let mut scene = caustica::evaluate_frame(&file, 1, &assets, &overrides)
            .expect("scenes/cornell_spheres.csc evaluates");
        scene.gather.min_density = min_density;
        let frame = render(&scene);
        let whole = caustica::render::compare::compare(&frame.color, &reference.color, 256, &[])
            .expect("the render and the reference are both 256²");
        let ceiling = ceiling_pixels(&frame);
        let mean = |image: &[glam::Vec3]| {
            let (mut sum, mut count) = (0.0f64, 0);
            for (i, &c) in ceiling.iter().enumerate() {
                if c {
                    sum += image[i].element_sum() as f64;
                    count += 1;
                }
            }
            sum / count as f64
        };
        println!(
            "β = {min_density}: relMSE {:.5}, ceiling {:+.2}% against the reference, {} seeds on it",
            whole.relmse,
            (mean(&frame.color) / mean(&reference.color) - 1.0) * 100.0,
            seeds_on(&frame, &ceiling)
        );
    }
}

/// The measurement of a starved ceiling: in `large_scene_ceiling`'s scene, 1024 seeds for a
/// few minimum densities against 8192 seeds (β = 0), for `film_seeds` film seeds: the ceiling's
/// seeds, its mean error, its per-pixel RMS error and the whole image's relative MSE.
fn starved_ceiling_error_against_more_seeds(film_seeds: u64) {
    for film_seed in 0..film_seeds {
        let (reference, _, reference_image) = large_scene_ceiling(8192, 0.0, film_seed);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        for min_density in [0.0, 0.25, 0.5, 0.75, 1.0] {
            let (values, on_ceiling, image) = large_scene_ceiling(1024, min_density, film_seed);
            let whole = caustica::render::compare::compare(&image, &reference_image, 64, &[])
                .expect("both renders are 64²");
            let rms = relative_rms(&values, &reference);
            println!(
                "film seed {film_seed}, β = {min_density}: {on_ceiling} of 1024 seeds on the \
                 ceiling ({} pixels), mean {:+.2}%, per-pixel RMS {:.2}%; whole image relMSE \
                 {:.5}",
                values.len(),
                (mean(&values) / mean(&reference) - 1.0) * 100.0,
                rms * 100.0,
                whole.relmse
            );
        }
    }
}
