//! The minimum seed density (`gather { min_density }`) on the photon-mapped Cornell box
//! (`scenes/cornell_spheres.csc`, issue 12): its flat ceiling receives at least the seeds the
//! minimum density guarantees, on the CPU; and where the seeding by errors alone starves it (the
//! box in a larger scene), the default brings the image closer to one with eight times the
//! seeds. The measurements behind the default are the benchmark `benches/seed_density.rs`
//! (docs/architecture.md, "A minimum seed density", has the numbers).

#[path = "support/seed_density.rs"]
mod seed_density_support;

use caustica::scene::DEFAULT_MIN_SEED_DENSITY;
use seed_density_support::{
    ceiling_pixels, cornell, guaranteed_ceiling_seeds, large_scene_ceiling, relative_rms, render,
    seeds_on, stat,
};

/// On a 256² Cornell box (one sample per pixel, 8192 seeds, 7 levels), the ceiling receives at
/// least the seeds the minimum density guarantees it ([`guaranteed_ceiling_seeds`]), with the
/// default density, a smaller one and all seeds by point counts.
#[test]
fn the_cornell_ceiling_receives_the_seeds_its_minimum_density_guarantees() {
    let (size, spp, seeds, levels) = (256, 1, 8192, 7);
    let mut guarantees = Vec::new();
    for min_density in [DEFAULT_MIN_SEED_DENSITY, 0.25, 1.0] {
        let frame = render(&cornell(size, spp, seeds, levels, 1, 2000, min_density, 0));
        let ceiling = ceiling_pixels(&frame);
        let points = stat(&frame, "gather/shading_points") as u32;
        let on_ceiling = seeds_on(&frame, &ceiling);
        let guaranteed =
            guaranteed_ceiling_seeds(&ceiling, size, levels, spp, points, seeds, min_density);
        println!("β = {min_density}: {on_ceiling} seeds on the ceiling, {guaranteed} guaranteed");
        assert!(
            on_ceiling >= guaranteed,
            "β = {min_density}: {on_ceiling} seeds on the ceiling, {guaranteed} guaranteed"
        );
        guarantees.push(guaranteed);
    }
    assert!(guarantees[0] > 0, "guarantees {guarantees:?}");
}

/// Where the seeding by errors alone starves the ceiling ([`large_scene_ceiling`]), the default
/// minimum density brings the render with 1024 seeds closer to the one with 8192 (β = 0): the
/// ceiling's per-pixel RMS error and the whole image's relative MSE, each averaged over four
/// film seeds (other photons, seeds and gather rays), are smaller than without it.
#[test]
fn a_starved_ceiling_comes_closer_to_a_render_with_more_seeds_with_the_default_min_density() {
    let (mut rms, mut relmse) = ([0.0; 2], [0.0; 2]);
    for film_seed in 0..4 {
        let (reference, _, reference_image) = large_scene_ceiling(8192, 0.0, film_seed);
        for (k, min_density) in [0.0, DEFAULT_MIN_SEED_DENSITY].into_iter().enumerate() {
            let (values, _, image) = large_scene_ceiling(1024, min_density, film_seed);
            rms[k] += relative_rms(&values, &reference) / 4.0;
            relmse[k] += caustica::render::compare::compare(&image, &reference_image, 64, &[])
                .unwrap()
                .relmse
                / 4.0;
        }
    }
    assert!(
        rms[1] < rms[0],
        "ceiling RMS error {:.4} with the default against {:.4} without",
        rms[1],
        rms[0]
    );
    assert!(
        relmse[1] < relmse[0],
        "image relMSE {:.6} with the default against {:.6} without",
        relmse[1],
        relmse[0]
    );
}
