//! The CPU reference backend's frame driver: the plan's passes, each tracing its tiles' camera
//! samples through the Whitted shade trees (`cpu::whitted`), then photon mapping's composition
//! (`cpu::compose`) with the frame's photon maps (`cpu::photons`), traced once; the twin of the
//! GPU's driver, stage for stage.

use std::sync::atomic::{AtomicUsize, Ordering};

use glam::Vec3;
use rayon::prelude::*;

use crate::accel::Prepared;
use crate::cpu::compose::{compose, photon_views, precompute_irradiance};
use crate::cpu::photons::trace_frame_trees;
use crate::cpu::whitted::{TileOutput, Tracer};
use crate::render::plan::FramePlan;
use crate::render::progress::Phase;
use crate::render::stats::{FrameStats, GatherStats, VdStats, WhittedStats};
use crate::render::{
    aov_layers, Backend, FirstHitSums, Frame, FrameMetadata, PhotonViews, RenderError,
    RenderOptions,
};
use crate::scene::{Integrator, Scene};

/// Side of the square tiles that rayon hands out.
const TILE: u32 = 16;

/// The CPU reference backend.
#[derive(Clone, Debug, Default)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "cpu".to_string()
    }

    fn render_frame(
        &self,
        scene: &Scene,
        prepared: &Prepared,
        options: &RenderOptions,
    ) -> Result<Frame, RenderError> {
        Ok(render_whitted(scene, prepared, options))
    }
}

/// The most camera rays one CPU pass traces when the caller sets no cut: 2²³ (a 1024² frame at
/// 8 samples per pixel), so that the shading points a pass collects stay within a few hundred
/// MB whatever the frame's samples per pixel.
pub const CPU_MAX_PASS_RAYS: u64 = 1 << 23;

/// Renders the whole frame with the Whitted model described in the module docs (and photon
/// mapping's composition for `integrator photon_map`), pass by pass as `render::plan` cuts it
/// for `options.max_pass_rays` ([`CPU_MAX_PASS_RAYS`] without one): the GPU's passes, run the
/// same way.
pub fn render_whitted(scene: &Scene, prepared: &Prepared, options: &RenderOptions) -> Frame {
    let start = std::time::Instant::now();
    let width = scene.film.width.max(1);
    let height = scene.film.height.max(1);
    let spp = scene.film.spp.max(1);
    let plan = FramePlan::new(scene, options.max_pass_rays.unwrap_or(CPU_MAX_PASS_RAYS));
    let tracer = Tracer::new(scene, prepared);
    let tiles: Vec<(u32, u32)> = (0..height.div_ceil(TILE))
        .flat_map(|ty| (0..width.div_ceil(TILE)).map(move |tx| (tx * TILE, ty * TILE)))
        .collect();
    let passes = plan.passes.len() as u32;
    let report = |phase: Phase, pass: u32, done: f32| {
        if let Some(p) = &options.progress {
            p.step(scene.frame, phase, pass, passes, done);
        }
    };
    // The frame's photon maps, traced once for every pass and layer.
    let (trees, photon_map_stats) =
        trace_frame_trees(scene, prepared, &tracer.vd, &plan, &|phase, done| {
            report(phase, 0, done)
        });
    let mut stats = FrameStats {
        photon_maps: photon_map_stats,
        ..Default::default()
    };
    let irradiance_photons = precompute_irradiance(scene, prepared, &trees);
    if let Some((photons, ms)) = &irradiance_photons {
        let gather = stats.gather.get_or_insert_with(GatherStats::default);
        gather.irradiance_photons = Some(photons.points.len() as u64);
        gather.precompute_ms = Some(*ms);
    }
    let n = (width * height) as usize;
    let mut color = vec![Vec3::ZERO; n];
    let mut direct = vec![Vec3::ZERO; n];
    // The first hits' sums, every one of them always (the twin's are cheap; the GPU sums the
    // ones asked for beside the coverage).
    let mut first = FirstHitSums {
        albedo: vec![Vec3::ZERO; n],
        shading_normal: vec![Vec3::ZERO; n],
        geometric_normal: vec![Vec3::ZERO; n],
        position: vec![Vec3::ZERO; n],
        hits: vec![0.0; n],
    };
    let mut ids = vec![[-1.0f32; 2]; n];
    let mut composed = PhotonViews::default();
    for (index, pass) in plan.passes.iter().enumerate() {
        report(Phase::Shading, index as u32, 0.0);
        let tiles_done = AtomicUsize::new(0);
        let outputs: Vec<TileOutput> = tiles
            .par_iter()
            .map(|&(x0, y0)| {
                let (w, h) = (TILE.min(width - x0), TILE.min(height - y0));
                let out = tracer.render_tile(x0, y0, w, h, pass);
                let done = tiles_done.fetch_add(1, Ordering::Relaxed) + 1;
                report(
                    Phase::Shading,
                    index as u32,
                    done as f32 / tiles.len() as f32,
                );
                out
            })
            .collect();
        let mut points = Vec::new();
        for t in &outputs {
            points.extend_from_slice(&t.points);
            for y in 0..t.h {
                for x in 0..t.w {
                    let (px, py) = (t.x0 + x, t.y0 + y);
                    if !pass.covers_pixel(px, py, width) {
                        continue;
                    }
                    let src = (y * t.w + x) as usize;
                    let dst = (py * width + px) as usize;
                    color[dst] += t.color[src];
                    direct[dst] += t.color[src];
                    let f = &t.first[src];
                    first.albedo[dst] += f.albedo;
                    first.shading_normal[dst] += f.normal;
                    first.geometric_normal[dst] += f.geometric;
                    first.position[dst] += f.position;
                    first.hits[dst] += f.hit;
                    if pass.sample_start == 0 {
                        ids[dst] = t.ids[src];
                    }
                }
            }
        }
        if scene.film.integrator == Integrator::PhotonMap {
            let pass_stats = compose(
                scene,
                prepared,
                &tracer.vd,
                &trees,
                irradiance_photons.as_ref().map(|(p, _)| p),
                &points,
                &mut color,
                &mut composed,
                &|phase, done| report(phase, index as u32, done),
            );
            stats.join_gather(pass_stats, index as u32);
        }
    }
    report(Phase::Layers, passes.saturating_sub(1), 0.0);
    let first = first.resolve(spp, &scene.camera);
    let (mut photon_views, view_stats) = photon_views(scene, prepared, &tracer, &trees);
    stats.add_view_searches(&view_stats);
    photon_views.add(&composed);
    photon_views.direct_part = direct;
    let aovs = aov_layers(&scene.output.layers, n, &first, &ids, &photon_views);
    let c = &tracer.counters;
    let seconds = start.elapsed().as_secs_f64();
    if !tracer.vd.levels.is_empty() {
        let (trees, bytes) = tracer.vd.built();
        let levels = &tracer.vd.levels;
        stats.vd = Some(VdStats {
            trees_built: Some(trees as u64),
            tree_bytes: Some(bytes as u64),
            max_level: levels.iter().copied().max().unwrap_or(0),
            mean_level: levels.iter().map(|&l| l as f64).sum::<f64>() / levels.len() as f64,
            ..Default::default()
        });
    }
    stats.whitted = WhittedStats {
        primary_rays: c.primary.get(),
        shadow_rays: c.shadow.get(),
        specular_rays: c.specular.get(),
        ms: seconds * 1e3,
    };
    Frame {
        width,
        height,
        color,
        alpha: first.alpha,
        aovs,
        metadata: FrameMetadata::of(scene, "cpu".to_string(), seconds, stats),
    }
}
