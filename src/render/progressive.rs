//! Progressive rendering for reference stills (`film { passes N }`, `--passes`, `--time`): the
//! frame is rendered pass after pass, each with a seed of its own (fresh camera samples, photon
//! maps, irradiance seeds and gather rays), and the passes are averaged.
//!
//! Each pass is an independent photon-mapped estimate whose density estimates shrink from pass
//! to pass as in the probabilistic form of progressive photon mapping (Knaus and Zwicker 2011):
//! the area of pass `i`'s estimates is `Π_{j=1..i} (j + α)/(j + 1)` times the first pass's
//! (α = 2/3), so the bias of the estimates goes to zero while their noise, averaged over the
//! passes, keeps falling. Caustica's estimates take the k nearest photons within a maximum
//! radius (Jensen), so a pass scales both: k by the area ratio (at least one photon) and the
//! maximum radius by its square root; a k-nearest estimate's radius then shrinks like a fixed
//! radius would, where the photons are dense (caustics) as where they are sparse.
//!
//! A gather ray's diffuse hit makes that shrinking estimate itself in every pass: Christensen's
//! precomputed irradiance (`gather { precomputed_irradiance }`) hands a hit the value of its
//! nearest irradiance photon, and where photons crowd (a caustic, a lit patch beside a dim one)
//! their cells reach into the dim side, a brightening that no number of passes shrinks (it was
//! +0.7% on the Cornell box's ceiling; docs/performance.md).
//!
//! And every shading point is a seed of its own, with [`PROGRESSIVE_GATHER_RAYS`] gather rays:
//! an irradiance cache of a few thousand seeds interpolates each point from samples around it,
//! and where those all lie on one side (the Cornell box's ceiling by its open front) a residue
//! of +0.4% to +0.8% stayed however many passes were averaged; a sample at every point leaves
//! the interpolation nothing to bridge, and the passes average the fewer rays' noise away
//! (tests/progressive.rs: the ceiling and the image within issue 12's bounds for four film
//! seeds, where the cache's were not). A pass traces shading points × 16 gather rays.
//!
//! The passes run through [`Backend::render_frame`] unchanged, so both backends render the same
//! passes and the GPU's frame twin is the CPU's. A frame of one pass does not come here: it is
//! the frame as it always was. On several devices each takes the next pass when it is free
//! (`render::schedule`), and the passes are added up in their order on the host.

use std::collections::BTreeMap;
use std::time::Instant;

use super::schedule::{hand_out, DeviceFailure, WorkError};
use super::{Backend, Frame, RenderError, RenderOptions};
use crate::accel::Prepared;
use crate::scene::Scene;

/// Gather rays of each shading point in a progressive pass (4 × 4 strata).
pub const PROGRESSIVE_GATHER_RAYS: u32 = 16;

/// Knaus and Zwicker's α: the fraction of the estimate's area kept from one pass to the next,
/// asymptotically (their recommended 2/3).
pub const ALPHA: f64 = 2.0 / 3.0;

/// The area of pass `pass`'s density estimates over the first pass's:
/// `Π_{j=1..pass} (j + α)/(j + 1)` (1 for pass 0).
pub fn area_ratio(pass: u32) -> f64 {
    (1..=pass as u64).fold(1.0, |r, j| r * (j as f64 + ALPHA) / (j as f64 + 1.0))
}

/// The scene of pass `pass` of a progressive render: its own seed, photon estimates whose k
/// and maximum radius shrink by [`area_ratio`], every shading point a seed with
/// [`PROGRESSIVE_GATHER_RAYS`] rays, and the full estimate at gather hits (no precomputed
/// irradiance). Pass 0 keeps the scene's seed and estimates.
pub fn pass_scene(scene: &Scene, pass: u32) -> Scene {
    let mut s = scene.clone();
    s.gather.precomputed_irradiance = 0;
    s.gather.seeds = u32::MAX;
    s.gather.rays = PROGRESSIVE_GATHER_RAYS;
    if pass == 0 {
        return s;
    }
    // A Weyl step of the golden ratio keeps the passes' seeds apart from each other.
    s.film.seed = scene
        .film
        .seed
        .wrapping_add((pass as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let ratio = area_ratio(pass);
    s.photons.knn = ((scene.photons.knn as f64 * ratio).round() as u32).clamp(1, scene.photons.knn);
    s.photons.radius_scale = scene.photons.radius_scale * ratio.sqrt() as f32;
    s
}

/// When a progressive render stops.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progression {
    /// The most passes.
    pub passes: u32,
    /// Stop starting passes once this many seconds have passed (at least one pass runs).
    pub seconds: Option<f64>,
}

impl Progression {
    /// The scene's passes, or with a time limit and no passes set as many as fit the time.
    pub fn of(scene: &Scene, seconds: Option<f64>) -> Progression {
        let passes = match (seconds, scene.film.passes) {
            (Some(_), 1) => u32::MAX,
            (_, n) => n.max(1),
        };
        Progression { passes, seconds }
    }
}

/// Renders `scene` progressively on `devices` and returns the average of its passes. Each
/// device takes the next pass when it finishes one (`render::schedule`); the passes are added
/// up in their order, whichever device made them, so the frame is the one a single device
/// makes. `on_pass` is told each pass as it is added (its number from 1, and the seconds so
/// far); `on_failure` of each device that fails and leaves (its pass goes to another).
pub fn render_progressive(
    devices: &[&dyn Backend],
    scene: &Scene,
    prepared: &Prepared,
    options: &RenderOptions,
    progression: Progression,
    mut on_pass: impl FnMut(u32, f64),
    mut on_failure: impl FnMut(&DeviceFailure),
) -> Result<Frame, RenderError> {
    let start = Instant::now();
    let mut sum: Option<Frame> = None;
    let mut stats = super::stats::FrameStats::default();
    let mut passes = 0u32;
    // Passes that finished before an earlier one, waiting for their turn to be added.
    let mut waiting: BTreeMap<u32, Frame> = BTreeMap::new();
    let mut names: Vec<String> = Vec::new();
    // The first pass ignores the time limit, so at least one runs.
    let may_start = |pass: usize| {
        pass == 0
            || progression
                .seconds
                .is_none_or(|limit| start.elapsed().as_secs_f64() < limit)
    };
    let work = |device: &dyn Backend, pass: usize| {
        // The pass reports its phases as the still's pass `pass`.
        let options = RenderOptions {
            progress: options
                .progress
                .as_ref()
                .map(|p| p.for_pass(pass as u32, progression.passes)),
            ..options.clone()
        };
        device
            .render_frame(&pass_scene(scene, pass as u32), prepared, &options)
            .map_err(WorkError::Device)
    };
    hand_out(
        devices,
        progression.passes as usize,
        &may_start,
        &work,
        &mut on_failure,
        &mut |pass, frame: Frame| -> Result<(), RenderError> {
            waiting.insert(pass as u32, frame);
            while let Some(frame) = waiting.remove(&passes) {
                if !names.contains(&frame.metadata.device) {
                    names.push(frame.metadata.device.clone());
                }
                if passes == 0 {
                    stats = frame.metadata.stats.clone();
                } else {
                    stats.join(&frame.metadata.stats, passes);
                }
                match &mut sum {
                    None => sum = Some(frame),
                    Some(total) => add_pass(total, &frame),
                }
                passes += 1;
                on_pass(passes, start.elapsed().as_secs_f64());
            }
            Ok(())
        },
    )?;
    // At least one pass ran: `progression.passes` is at least 1 and the first pass ignores time.
    let mut frame = sum.ok_or(RenderError::Cancelled)?;
    if passes > 1 {
        let inv = 1.0 / passes as f32;
        for c in &mut frame.color {
            *c *= inv;
        }
        for a in &mut frame.alpha {
            *a *= inv;
        }
        for layer in &mut frame.aovs {
            if averaged(&layer.name) {
                layer.pixels.iter_mut().for_each(|v| *v *= inv);
            }
        }
        frame.metadata.stats = stats;
    }
    frame.metadata.device = names.join(" + ");
    frame.metadata.stats.progressive_passes = Some(passes);
    frame.metadata.spp = scene.film.spp.max(1) * passes;
    frame.metadata.render_seconds = start.elapsed().as_secs_f64();
    Ok(frame)
}

/// Whether a layer is the mean of the passes (the depth `Z`, in the default layer, and `id`, of
/// the first camera sample through the pixel, are the first pass's).
fn averaged(layer: &str) -> bool {
    layer != super::DEPTH_LAYER && layer != "id"
}

/// Adds `pass`'s colour and averaged layers into `total`.
fn add_pass(total: &mut Frame, pass: &Frame) {
    for (a, b) in total.color.iter_mut().zip(&pass.color) {
        *a += *b;
    }
    for (a, b) in total.alpha.iter_mut().zip(&pass.alpha) {
        *a += *b;
    }
    for (a, b) in total.aovs.iter_mut().zip(&pass.aovs) {
        if averaged(&a.name) {
            for (x, y) in a.pixels.iter_mut().zip(&b.pixels) {
                *x += *y;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_area_shrinks_like_knaus_and_zwickers_radius() {
        assert_eq!(area_ratio(0), 1.0);
        assert!((area_ratio(1) - (1.0 + ALPHA) / 2.0).abs() < 1e-12);
        // Π (j + α)/(j + 1) ~ C·i^(α − 1): the ratio of two late passes follows the power law.
        let (a, b) = (area_ratio(1000), area_ratio(8000));
        assert!(((a / b).ln() / 8f64.ln() - (1.0 - ALPHA)).abs() < 1e-3);
        assert!((1..50).all(|i| area_ratio(i) < area_ratio(i - 1)));
    }

    #[test]
    fn later_passes_have_their_own_seed_and_smaller_estimates() {
        let mut scene = Scene::default();
        scene.photons.knn = 64;
        assert_eq!(pass_scene(&scene, 0).film.seed, scene.film.seed);
        let seeds: Vec<u64> = (0..8).map(|i| pass_scene(&scene, i).film.seed).collect();
        let mut unique = seeds.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), seeds.len());
        let p8 = pass_scene(&scene, 8);
        let ratio = area_ratio(8);
        assert_eq!(p8.photons.knn, (64.0 * ratio).round() as u32);
        assert!((p8.photons.radius_scale as f64 - ratio.sqrt()).abs() < 1e-6);
        assert!(pass_scene(&scene, 1_000_000).photons.knn >= 1);
    }

    #[test]
    fn every_pass_gathers_at_every_shading_point_with_the_full_estimate_at_the_hits() {
        let mut scene = Scene::default();
        scene.gather.precomputed_irradiance = 4;
        for pass in [0, 1, 7] {
            let s = pass_scene(&scene, pass);
            assert_eq!(s.gather.precomputed_irradiance, 0);
            assert_eq!(s.gather.seeds, u32::MAX);
            assert_eq!(s.gather.rays, PROGRESSIVE_GATHER_RAYS);
        }
    }

    #[test]
    fn a_time_limit_without_passes_runs_as_many_passes_as_fit() {
        let mut scene = Scene::default();
        assert_eq!(Progression::of(&scene, Some(3.0)).passes, u32::MAX);
        assert_eq!(Progression::of(&scene, None).passes, 1);
        scene.film.passes = 6;
        assert_eq!(Progression::of(&scene, Some(3.0)).passes, 6);
    }
}
