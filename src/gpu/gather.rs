//! Photon mapping's second half on the GPU: the structs shared with the kernels, the shading
//! points of the shade trees, the final gather and the composition (seeding is in
//! `gpu::seeding`, interpolation in `gpu::irradiance`).

use bytemuck::{Pod, Zeroable};

use super::context::{GpuContext, GpuError};
use super::core::{GpuCore, ShadeLevel, TraversalKernels};
use super::encoder::{Encoder, Grid};
use super::irradiance::IrradianceKernels;
use super::irradiance_photons::{GpuIrradiancePhotons, IrradiancePhotonKernels};
use super::kdtree::KdTreeBuilder;
use super::kernel::{
    read_buffer, read_words, stage_words, storage_buffer_sized, uniform_buffer, Checks, Kernel,
    StagedWords,
};
use super::knn::status_error;
use super::knn::KnnQueries;
use super::maps::{FrameMaps, MapTree};
use super::pool::GpuBuffer;
use super::prims::CountBuffer;
use super::seeding::{SeedingKernels, SeedingSettings};
use super::upload::{
    frame_params, FrameParams, GpuHit, GpuIrradianceSample, GpuRay, GpuShadingPoint, SceneBuffers,
    COMPOSE_ADD,
};
use super::vd_pipeline::VdFrameGpu;
use crate::accel::Prepared;
use crate::render::gather::{
    gather_ray_count, gather_strata, SAMPLE_RADIUS_MAX, SAMPLE_RADIUS_MIN,
};
use crate::render::photons::{scene_sphere, EstimateSettings};
use crate::render::progress::Phase;
use crate::render::stats::GatherStats;
use crate::scene::{Aov, Scene};
use std::time::Instant;

/// What every chunk of a final gather reads ([`GpuCore::final_gather`]).
struct GatherInputs<'a> {
    kernels: &'a GatherStageKernels<'a>,
    scene: &'a Scene,
    prepared: &'a Prepared,
    buffers: &'a SceneBuffers,
    traversal: &'a TraversalKernels,
    /// The frame's shading points, and the seeds' indices into them.
    points: &'a GpuBuffer,
    seeds: &'a GpuBuffer,
    global: &'a MapTree,
    photons: Option<&'a GpuIrradiancePhotons>,
}

/// Bytes of one gather ray's query (position and normal, two `vec4`s).
const GATHER_QUERY_BYTES: u64 = 32;

/// The state of one gather dispatch. Twin of `GatherParams` in
/// `shaders/shared/gather_types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GatherParams {
    pub seed_count: u32,
    pub rays_per_seed: u32,
    pub ray_count: u32,
    pub step: u32,
    pub radius_min: f32,
    pub radius_max: f32,
    /// The strata's rows (`render::gather::gather_strata`); `rays_per_seed / rows` columns.
    pub rows: u32,
    /// The first seed of this chunk of the gather (`seed_count` seeds from here).
    pub seed_offset: u32,
}

/// A gather ray's throughput (w: 1 while it goes on), the radiance it has brought, and its
/// first hit's distance. Twin of `GatherPath` in `shaders/shared/gather_types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GatherPath {
    pub weight: [f32; 4],
    pub radiance: [f32; 3],
    pub first_t: f32,
}

/// The kernels photon mapping's second half runs: the gather's own, and the seeding, kd-tree,
/// density and interpolation kernels it calls.
pub struct GatherStageKernels<'a> {
    pub gather: &'a GatherKernels,
    pub seeding: &'a SeedingKernels,
    pub builder: &'a KdTreeBuilder,
    pub knn: &'a KnnQueries,
    pub irradiance: &'a IrradianceKernels,
    pub irradiance_photons: &'a IrradiancePhotonKernels,
}

/// The kernels of the final gather and the composition (`shaders/gather/`).
pub struct GatherKernels {
    rays: Kernel,
    shade: Kernel,
    queries: Kernel,
    reduce: Kernel,
    point_flags: Kernel,
    collect: Kernel,
    compose: Kernel,
    clear_own: Kernel,
}

impl GatherKernels {
    pub fn new(ctx: &GpuContext) -> Result<GatherKernels, GpuError> {
        let kernel = |file: &str| Kernel::new(ctx, &format!("gather/{file}"), &[], Checks::Checked);
        Ok(GatherKernels {
            rays: kernel("rays.wgsl")?,
            shade: kernel("shade.wgsl")?,
            queries: kernel("queries.wgsl")?,
            reduce: kernel("reduce.wgsl")?,
            point_flags: kernel("point_flags.wgsl")?,
            collect: kernel("collect.wgsl")?,
            compose: kernel("compose.wgsl")?,
            clear_own: kernel("clear_own.wgsl")?,
        })
    }
}

/// The frame's diffuse shading points on the GPU, level by level.
pub(super) struct ShadingPoints {
    pub(super) buffer: GpuBuffer,
    pub(super) count: u32,
    /// (first point, points) of each shade level.
    pub(super) levels: Vec<(u32, u32)>,
}

/// Christensen's precomputed irradiance over a frame's global map, made by its first
/// composition and kept for the passes after it (none without `gather {
/// precomputed_irradiance }`).
pub(super) type PrecomputedIrradiance = std::cell::OnceCell<Option<GpuIrradiancePhotons>>;

/// What the GPU's composition reports: the statistics of its stages, the seeds per pixel, and
/// the per-point components (for the `caustic` and `indirect` layers).
pub(super) struct ComposeOutput {
    pub(super) stats: GatherStats,
    pub(super) seeds_per_pixel: Vec<f32>,
    pub(super) parts: ComposeParts,
}

/// The frame's shading points with their caustic flux density and indirect irradiance.
pub(super) struct ComposeParts {
    pub(super) points: ShadingPoints,
    pub(super) caustic: GpuBuffer,
    pub(super) indirect: GpuBuffer,
}

/// The first half of the shading points' collection ([`GpuCore::begin_collect`]): every level's
/// compacted diffuse nodes, and their counts staged for one read after the submission.
pub(super) struct PendingPoints {
    compacted: Vec<(GpuBuffer, CountBuffer)>,
    counts: (StagedWords, wgpu::SubmissionIndex),
}

impl GpuCore {
    /// Lists the diffuse nodes' shading points of every level into one buffer, level by level
    /// and in node order within a level (the CPU twin's order for one sample per pixel): the
    /// first half, which flags and compacts every level's diffuse nodes and stages their
    /// counts, without waiting; [`GpuCore::finish_collect`] reads the counts and lists the
    /// points, so that work submitted in between runs while the host waits for the counts.
    pub(super) fn begin_collect(
        &self,
        kernels: &GatherStageKernels,
        levels: &[ShadeLevel],
        base: FrameParams,
    ) -> Result<PendingPoints, GpuError> {
        let ctx = &self.ctx;
        let k = &kernels.gather;
        // Every level's diffuse nodes flagged and compacted in one submission, their counts read
        // back together.
        let largest = levels.iter().map(|l| l.count).max().unwrap_or(0);
        let indices = self.iota(largest.max(1))?;
        let mut encoder = Encoder::new(ctx);
        let mut compacted = Vec::new();
        for level in levels {
            let n = level.count as u32;
            let params = uniform_buffer(
                ctx,
                "params",
                &FrameParams {
                    ray_count: n,
                    ..base
                },
            );
            let flags = storage_buffer_sized(ctx, "point flags", n as u64 * 4)?;
            let selected = storage_buffer_sized(ctx, "diffuse nodes", n as u64 * 4)?;
            let bind = k.point_flags.bind(
                ctx,
                &[
                    ("params", &params),
                    ("level_points", &level.points),
                    ("point_flags", &flags),
                ],
            )?;
            k.point_flags
                .dispatch(&mut encoder, &bind, k.point_flags.grid_for(ctx, n as u64));
            let count = self
                .prims
                .compact(ctx, &mut encoder, &indices, &flags, &selected, n)?;
            compacted.push((selected, count));
        }
        let words: Vec<(&GpuBuffer, u64)> = compacted.iter().map(|(_, c)| (&c.buffer, 0)).collect();
        let staged = stage_words(ctx, &mut encoder, &words);
        let index = ctx.submit([encoder.finish()]);
        Ok(PendingPoints {
            compacted,
            counts: (staged, index),
        })
    }

    /// The second half of [`GpuCore::begin_collect`].
    pub(super) fn finish_collect(
        &self,
        kernels: &GatherStageKernels,
        levels: &[ShadeLevel],
        base: FrameParams,
        pending: PendingPoints,
    ) -> Result<ShadingPoints, GpuError> {
        let ctx = &self.ctx;
        let k = &kernels.gather;
        let point_size = std::mem::size_of::<GpuShadingPoint>() as u64;
        let PendingPoints {
            compacted,
            counts: (staged, index),
        } = pending;
        let level_counts = staged.read(ctx, index)?;
        let mut selections = Vec::new();
        let mut total = 0u32;
        for (l, ((selected, count), c)) in compacted.into_iter().zip(level_counts).enumerate() {
            selections.push((l as u32, selected, count, total, c));
            total = total.checked_add(c).ok_or_else(|| {
                GpuError::Device("more shading points than 32-bit indices address".into())
            })?;
        }
        let buffer = storage_buffer_sized(ctx, "shading points", total.max(1) as u64 * point_size)?;
        let mut encoder = Encoder::new(ctx);
        let mut ranges = Vec::new();
        let mut keep = Vec::new();
        for (l, selected, count, offset, c) in selections {
            ranges.push((offset, c));
            if c == 0 {
                continue;
            }
            let params = uniform_buffer(
                ctx,
                "params",
                &FrameParams {
                    ray_count: c,
                    ray_offset: offset,
                    bounce: l,
                    ..base
                },
            );
            let bind = k.collect.bind(
                ctx,
                &[
                    ("params", &params),
                    ("level_points", &levels[l as usize].points),
                    ("selected", &selected),
                    ("selected_count", &count.buffer),
                    ("points", &buffer),
                ],
            )?;
            k.collect
                .dispatch(&mut encoder, &bind, k.collect.grid_for(ctx, c as u64));
            keep.push((params, selected, count));
        }
        ctx.submit([encoder.finish()]);
        Ok(ShadingPoints {
            buffer,
            count: total,
            levels: ranges,
        })
    }

    /// The caustic map's flux density at each of `points`, submitted: one `vec4` per point
    /// (zeros without caustic photons).
    fn estimate_caustics(
        &self,
        kernels: &GatherStageKernels,
        caustic: &MapTree,
        points: &ShadingPoints,
        settings: &EstimateSettings,
        prepared: &Prepared,
    ) -> Result<GpuBuffer, GpuError> {
        if caustic.map.count == 0 || points.count == 0 {
            // Cleared on the device, not uploaded: a scene without caustic photons sends nothing
            // per frame for them.
            let bytes = points.count.max(1) as u64 * std::mem::size_of::<[f32; 4]>() as u64;
            return storage_buffer_sized(&self.ctx, "no caustics", bytes);
        }
        let queries = (&points.buffer, points.count);
        self.map_density(kernels, caustic, queries, settings, prepared)
    }

    /// The flux density of `map` at the first `count` (position, normal) queries (k nearest
    /// photons, the queries taken in the Morton order of their positions), submitted, its
    /// status checked at the frame's end: one `vec4` per query.
    fn map_density(
        &self,
        kernels: &GatherStageKernels,
        map: &MapTree,
        (queries, count): (&GpuBuffer, u32),
        settings: &EstimateSettings,
        prepared: &Prepared,
    ) -> Result<GpuBuffer, GpuError> {
        let ctx = &self.ctx;
        let cube = scene_cube(prepared);
        let mut encoder = Encoder::new(ctx);
        let order = self
            .prims
            .morton_order(ctx, &mut encoder, queries, 2, count, cube)?;
        let (dispatch, output) = kernels.knn.prepare_density(
            ctx,
            &map.tree,
            &map.map.records,
            queries,
            0,
            count,
            settings.k as u32,
            settings.max_dist2,
            settings.filter,
            Some(&order),
        )?;
        dispatch.record(&mut encoder, None);
        ctx.submit([encoder.finish()]);
        ctx.defer_status_check(&output.status, status_error);
        Ok(output.density)
    }

    /// The most gather rays one chunk of the final gather traces on this adapter: its rays,
    /// paths, hits and queries must each fit one storage binding; `caller` can lower it.
    pub fn max_gather_rays(&self, caller: Option<u64>) -> u64 {
        let limit = self.ctx.info.binding_limit();
        let per_ray = [
            std::mem::size_of::<GpuRay>(),
            std::mem::size_of::<GatherPath>(),
            std::mem::size_of::<GpuHit>(),
            GATHER_QUERY_BYTES as usize,
        ]
        .into_iter()
        .max()
        .unwrap_or(1) as u64;
        (limit / per_ray).min(caller.unwrap_or(u64::MAX)).max(1)
    }

    /// Final gather (paper 003 section 6.2.4) at `seed_count` seeds (indices into `points`):
    /// the irradiance samples, one per seed, as `array<IrradianceSample>`, and the number of
    /// chunks. Twin of
    /// `cpu::gather::final_gather`. The seeds are gathered in chunks of at most `max_rays`
    /// rays ([`GpuCore::max_gather_rays`]), each seed with its own random streams whatever the
    /// chunk, so the samples do not depend on the cut. The rays, paths, hits and queries live in
    /// scratch buffers kept between frames (every element a kernel reads is written first in
    /// the same chunk; the query flags are cleared).
    #[allow(clippy::too_many_arguments)]
    fn final_gather(
        &self,
        kernels: &GatherStageKernels,
        scene: &Scene,
        prepared: &Prepared,
        buffers: &SceneBuffers,
        traversal: &TraversalKernels,
        vd: &mut Option<VdFrameGpu>,
        points: &GpuBuffer,
        seeds: &GpuBuffer,
        seed_count: u32,
        global: &MapTree,
        photons: Option<&GpuIrradiancePhotons>,
        max_rays: u64,
    ) -> Result<(GpuBuffer, GpuBuffer, u64), GpuError> {
        let ctx = &self.ctx;
        let (rows, columns) = gather_strata(scene.gather.rays);
        let per_seed = rows * columns;
        let chunk = (max_rays / per_seed as u64).clamp(1, u32::MAX as u64) as u32;
        let samples = storage_buffer_sized(
            ctx,
            "irradiance samples",
            seed_count.max(1) as u64 * std::mem::size_of::<GpuIrradianceSample>() as u64,
        )?;
        let positions =
            storage_buffer_sized(ctx, "sample positions", seed_count.max(1) as u64 * 16)?;
        let inputs = GatherInputs {
            kernels,
            scene,
            prepared,
            buffers,
            traversal,
            points,
            seeds,
            global,
            photons,
        };
        let mut first = 0u32;
        let mut chunks = 0u64;
        while first < seed_count {
            let count = chunk.min(seed_count - first);
            let chunk_params = GatherParams {
                seed_count: count,
                rays_per_seed: per_seed,
                rows,
                seed_offset: first,
                ..Default::default()
            };
            self.gather_chunk(&inputs, vd, chunk_params, (&samples, &positions))?;
            first += count;
            chunks += 1;
        }
        Ok((samples, positions, chunks))
    }

    /// One chunk of [`GpuCore::final_gather`]: the seeds `seed_offset..seed_offset +
    /// seed_count` of `chunk`, whose samples and positions it writes at those indices.
    fn gather_chunk(
        &self,
        inputs: &GatherInputs,
        vd: &mut Option<VdFrameGpu>,
        chunk: GatherParams,
        (samples, positions): (&GpuBuffer, &GpuBuffer),
    ) -> Result<(), GpuError> {
        let &GatherInputs {
            kernels,
            scene,
            prepared,
            buffers,
            traversal,
            points,
            seeds,
            global,
            photons,
        } = inputs;
        let ctx = &self.ctx;
        let k = &kernels.gather;
        let base = frame_params(scene, prepared);
        let (_, radius) = scene_sphere(prepared);
        let settings = EstimateSettings::of(scene, prepared);
        let per_seed = chunk.rays_per_seed;
        let n = chunk.seed_count as u64 * per_seed as u64;
        let ray_count = u32::try_from(n).map_err(|_| {
            GpuError::Device(format!(
                "{n} gather rays are more than 32-bit indices address"
            ))
        })?;
        let gp = |step: u32| GatherParams {
            ray_count,
            step,
            radius_min: SAMPLE_RADIUS_MIN * radius,
            radius_max: SAMPLE_RADIUS_MAX * radius,
            ..chunk
        };
        let frame = uniform_buffer(ctx, "params", &base);
        let rays = self.scratch("gather rays", n * std::mem::size_of::<GpuRay>() as u64)?;
        let paths = self.scratch("gather paths", n * std::mem::size_of::<GatherPath>() as u64)?;
        let queries = self.scratch("gather queries", n * GATHER_QUERY_BYTES)?;
        let weights = self.scratch("gather query weights", n * 16)?;
        let flags = self.scratch("gather query flags", n * 4)?;
        let p0 = uniform_buffer(ctx, "gather params", &gp(0));
        let bind = self.bind_with_scene(
            &k.rays,
            buffers,
            &frame,
            &[
                ("gather_params", &p0),
                ("points", points),
                ("seeds", seeds),
                ("rays", &rays),
                ("paths", &paths),
                ("queries", &queries),
            ],
        )?;
        let mut encoder = Encoder::new(ctx);
        encoder.clear_buffer(&flags, 0, None);
        k.rays
            .dispatch(&mut encoder, &bind, k.rays.grid_for(ctx, n));
        let hits = self.scratch("gather hits", n * std::mem::size_of::<GpuHit>() as u64)?;
        // Each step traces a queue of rays: all of them at step 0, then the ones the step
        // before sent on (`step_counts[step - 1]` of them, counted on the device).
        let next_rays = self.scratch(
            "gather rays sent on",
            n * std::mem::size_of::<GpuRay>() as u64,
        )?;
        let queues = [&rays, &next_rays];
        let steps = scene.film.max_depth as u64 + 1;
        let step_counts = self.scratch("gather step counts", steps * 4)?;
        encoder.clear_buffer(&step_counts, 0, Some(steps * 4));
        // The first step in one submission, the later ones in another (without VD patches:
        // with them, submitting the first step's shading on its own changed the image by a
        // relative MSE of 4e-4 on scenes/vd_patches.csc, unexplained, so it is left as it was).
        for step in 0..=scene.film.max_depth {
            let (queue, next) = (queues[step as usize % 2], queues[(step as usize + 1) % 2]);
            let live = (step > 0).then(|| (&step_counts, (step as u64 - 1) * 4));
            self.trace_rays(
                &mut encoder,
                traversal,
                buffers,
                FrameParams { ray_count, ..base },
                queue,
                &hits,
                live,
                vd,
                &mut None,
                "gather trace",
            )?;
            let p = uniform_buffer(ctx, "gather params", &gp(step));
            if let Some((counts, offset)) = live {
                let at = std::mem::offset_of!(GatherParams, ray_count) as u64;
                encoder.copy_buffer_to_buffer(counts, offset, &p, at, 4);
            }
            let bind = self.bind_with_scene(
                &k.shade,
                buffers,
                &frame,
                &[
                    ("gather_params", &p),
                    ("rays", queue),
                    ("hits", &hits),
                    ("paths", &paths),
                    ("queries", &queries),
                    ("query_weights", &weights),
                    ("query_flags", &flags),
                    ("next_rays", next),
                    ("step_counts", &step_counts),
                ],
            )?;
            match live {
                // Workgroups for the rays sent on only (as the trace above).
                Some(live) if vd.is_none() => {
                    let args = self
                        .prims
                        .dispatch_args(ctx, &mut encoder, &k.shade, live, n)?;
                    k.shade
                        .dispatch_grid(&mut encoder, &bind, Grid::Indirect(&args, 0));
                }
                _ => k
                    .shade
                    .dispatch(&mut encoder, &bind, k.shade.grid_for(ctx, n)),
            }
            if step == 0 && vd.is_none() {
                // The first step goes to the device at once: it traces every gather ray while
                // the host records the later steps.
                ctx.submit([std::mem::replace(&mut encoder, Encoder::new(ctx)).finish()]);
            }
        }
        let (densities, slots) = if scene.gather.precomputed_irradiance > 0 {
            // Christensen: the nearest precomputed irradiance photon's, looked up for every
            // ray in place (rays.wgsl wrote each ray's seed as its query, a diffuse hit wrote
            // its own; the reduction reads only the diffuse hits'), with no count to wait for.
            ctx.submit([encoder.finish()]);
            let densities = kernels.irradiance_photons.lookup(
                ctx,
                &self.prims,
                photons,
                &queries,
                ray_count,
                scene_cube(prepared),
            )?;
            (densities, self.iota(n)?)
        } else {
            // The full estimate at every gather hit, over the hits packed densely.
            let slots = self.scratch("gather query slots", n * 4)?;
            self.prims
                .exclusive_scan(ctx, &mut encoder, &flags, &slots, ray_count)?;
            ctx.submit([encoder.finish()]);
            // The last slot plus the last flag (none without rays).
            let query_count = match (ray_count as u64).checked_sub(1) {
                Some(last) => {
                    let words = read_words(ctx, &[(&slots, last), (&flags, last)])?;
                    words[0] + words[1]
                }
                None => 0,
            };
            let dense = self.scratch("gather dense queries", query_count.max(1) as u64 * 32)?;
            let bind = self.bind_with_scene(
                &k.queries,
                buffers,
                &frame,
                &[
                    ("gather_params", &p0),
                    ("queries", &queries),
                    ("query_flags", &flags),
                    ("query_slots", &slots),
                    ("dense_queries", &dense),
                ],
            )?;
            let mut encoder = Encoder::new(ctx);
            k.queries
                .dispatch(&mut encoder, &bind, k.queries.grid_for(ctx, n));
            ctx.submit([encoder.finish()]);
            let densities = if query_count > 0 {
                self.map_density(kernels, global, (&dense, query_count), &settings, prepared)?
            } else {
                storage_buffer_sized(ctx, "no densities", 16)?
            };
            (densities, slots)
        };
        let bind = self.bind_with_scene(
            &k.reduce,
            buffers,
            &frame,
            &[
                ("gather_params", &p0),
                ("points", points),
                ("seeds", seeds),
                ("paths", &paths),
                ("query_weights", &weights),
                ("query_flags", &flags),
                ("query_slots", &slots),
                ("densities", &densities),
                ("samples", samples),
                ("sample_positions", positions),
            ],
        )?;
        let mut encoder = Encoder::new(ctx);
        // One workgroup per seed.
        k.reduce.dispatch(
            &mut encoder,
            &bind,
            k.reduce.grid_for(
                ctx,
                chunk.seed_count as u64 * k.reduce.workgroup_size as u64,
            ),
        );
        ctx.submit([encoder.finish()]);
        Ok(())
    }

    /// Photon mapping's composition on the GPU (twin of `cpu::compose::compose`): collects the
    /// shade levels' diffuse shading points and, with the frame's photon maps (their trees and
    /// `precomputed`, the global map's irradiance photons, made by the frame's first composition),
    /// seeds and gathers the
    /// irradiance samples, builds their tree, interpolates the indirect
    /// irradiance and estimates the caustic map's density at every point, and adds
    /// albedo/π × both to each diffuse node's own light before the trees are accumulated.
    /// Returns the statistics and the seeds per pixel.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn compose_photon_map(
        &self,
        kernels: &GatherStageKernels,
        scene: &Scene,
        prepared: &Prepared,
        buffers: &SceneBuffers,
        traversal: &TraversalKernels,
        vd: &mut Option<VdFrameGpu>,
        maps: &FrameMaps,
        precomputed: &PrecomputedIrradiance,
        levels: &[ShadeLevel],
        max_gather_rays: u64,
        report: &dyn Fn(Phase),
    ) -> Result<ComposeOutput, GpuError> {
        let ctx = &self.ctx;
        let base = frame_params(scene, prepared);
        let (_, radius) = scene_sphere(prepared);
        let settings = EstimateSettings::of(scene, prepared);
        let mut stats = GatherStats::default();
        let (Some(global), Some(caustic)) = (&maps.global, &maps.caustic) else {
            return Err(GpuError::Device(
                "photon mapping needs the frame's global and caustic maps".to_string(),
            ));
        };
        // The shading points' counts are staged, then the irradiance photons (which need only
        // the global map; once per frame, by its first composition) submitted before the counts
        // are read: the device computes them while the host lists the points and records the
        // seeding.
        ctx.set_stage("gather/collect");
        let clock = Instant::now();
        let pending_points = self.begin_collect(kernels, levels, base)?;
        let mut collect_ms = clock.elapsed().as_secs_f64() * 1e3;
        let stride = scene.gather.precomputed_irradiance;
        if precomputed.get().is_none() {
            let mut made = None;
            if stride > 0 {
                ctx.set_stage("gather/precompute");
                let start = Instant::now();
                made = kernels.irradiance_photons.precompute(
                    ctx,
                    &self.prims,
                    kernels.builder,
                    global,
                    stride,
                    &settings,
                    scene_cube(prepared),
                )?;
                stats.irradiance_photons = Some(made.as_ref().map_or(0, |p| p.count) as u64);
                stats.precompute_ms = Some(start.elapsed().as_secs_f64() * 1e3);
            }
            // Only this frame's compositions set it, one after another.
            let _ = precomputed.set(made);
        }
        let photons = precomputed.get().and_then(Option::as_ref);
        ctx.set_stage("gather/collect");
        let clock = Instant::now();
        let points = self.finish_collect(kernels, levels, base, pending_points)?;
        collect_ms += clock.elapsed().as_secs_f64() * 1e3;
        stats.shading_points = Some(points.count as u64);
        stats.collect_points_ms = Some(collect_ms);
        if points.count == 0 {
            // Nothing diffuse in view (the camera sees only the background, lights or
            // mirrors of nothing): no seeds, no gather, no light to add.
            let zeros = || storage_buffer_sized(ctx, "no photon light", 16);
            let parts = ComposeParts {
                points,
                caustic: zeros()?,
                indirect: zeros()?,
            };
            stats.seeds = Some(0);
            let pixels = (scene.film.width.max(1) * scene.film.height.max(1)) as usize;
            return Ok(ComposeOutput {
                stats,
                seeds_per_pixel: vec![0.0; pixels],
                parts,
            });
        }
        report(Phase::Seeding);
        ctx.set_stage("gather/seeding");
        let start = Instant::now();
        // The caustic map's estimate at the shading points needs no seeds: it goes to the
        // device while seeding waits for its quadtree's counts, and keeps the device busy while
        // the host records the rest of seeding and the final gather.
        let mut caustic_density = None;
        let mut caustics_ms = 0.0;
        let (seeds, seed_count) = kernels.seeding.seed_irradiance_samples(
            ctx,
            &self.prims,
            &points.buffer,
            points.count,
            &SeedingSettings::from_scene(scene, radius),
            &mut || {
                ctx.set_stage("gather/caustics");
                let start = Instant::now();
                caustic_density =
                    Some(self.estimate_caustics(kernels, caustic, &points, &settings, prepared)?);
                caustics_ms = start.elapsed().as_secs_f64() * 1e3;
                ctx.set_stage("gather/seeding");
                Ok(())
            },
        )?;
        if caustic_density.is_some() {
            stats.caustics_ms = Some(caustics_ms);
        }
        stats.seeds = Some(seed_count as u64);
        stats.seeding_ms = Some(start.elapsed().as_secs_f64() * 1e3);
        report(Phase::Gather);
        ctx.set_stage("gather/final_gather");
        let start = Instant::now();
        let (samples, sample_positions, chunks) = self.final_gather(
            kernels,
            scene,
            prepared,
            buffers,
            traversal,
            vd,
            &points.buffer,
            &seeds,
            seed_count,
            global,
            photons,
            max_gather_rays,
        )?;
        stats.rays = Some(seed_count as u64 * gather_ray_count(scene) as u64);
        stats.final_gather_ms = Some(start.elapsed().as_secs_f64() * 1e3);
        stats.final_gather_chunks = Some(chunks);
        ctx.set_stage("gather/irradiance_tree");
        let start = Instant::now();
        let irradiance_tree = kernels.builder.build(ctx, &sample_positions, seed_count)?;
        stats.irradiance_tree_ms = Some(start.elapsed().as_secs_f64() * 1e3);
        ctx.set_stage("gather/interpolate");
        let start = Instant::now();
        let mut encoder = Encoder::new(ctx);
        let indirect = kernels.irradiance.interpolate(
            ctx,
            &mut encoder,
            &samples,
            &irradiance_tree,
            &points.buffer,
            points.count,
        )?;
        ctx.submit([encoder.finish()]);
        // A failed search (a malformed tree, a driver-cut loop) is an error, never NaN pixels:
        // checked with the frame's deferred checks, before the film is read.
        indirect.defer_check(ctx);
        stats.interpolate_ms = Some(start.elapsed().as_secs_f64() * 1e3);
        let caustic_density = match caustic_density {
            Some(density) => density,
            None => {
                ctx.set_stage("gather/caustics");
                let start = Instant::now();
                let density =
                    self.estimate_caustics(kernels, caustic, &points, &settings, prepared)?;
                stats.caustics_ms = Some(start.elapsed().as_secs_f64() * 1e3);
                density
            }
        };
        ctx.set_stage("gather/compose");
        let start = Instant::now();
        // Each level's diffuse nodes take their points' light.
        let parts = ComposeParts {
            points,
            caustic: caustic_density,
            indirect: indirect.irradiance,
        };
        let nodes: Vec<&GpuBuffer> = levels.iter().map(|l| &l.nodes).collect();
        self.apply_components(kernels, &nodes, &parts, COMPOSE_ADD, base)?;
        stats.compose_ms = Some(start.elapsed().as_secs_f64() * 1e3);
        stats.photon_map_ms = Some(clock.elapsed().as_secs_f64() * 1e3);
        // Seeds per pixel.
        let pixels = (scene.film.width.max(1) * scene.film.height.max(1)) as usize;
        let mut seeds_per_pixel = vec![0.0f32; pixels];
        // Only the `seeds` layer needs them: reading every shading point back costs 32 bytes
        // a point.
        if seed_count > 0 && scene.output.layers.contains(&Aov::Seeds) {
            let seed_indices: Vec<u32> = read_buffer(ctx, &seeds, seed_count as usize)?;
            let all: Vec<GpuShadingPoint> =
                read_buffer(ctx, &parts.points.buffer, parts.points.count as usize)?;
            for s in seed_indices {
                if let Some(p) = all.get(s as usize) {
                    if (p.pixel as usize) < pixels {
                        seeds_per_pixel[p.pixel as usize] += 1.0;
                    }
                }
            }
        }
        Ok(ComposeOutput {
            stats,
            seeds_per_pixel,
            parts,
        })
    }

    /// Gives each level's diffuse nodes (`nodes[level]`) their points' light: `COMPOSE_ADD`
    /// adds albedo/π × (caustic + indirect) to their own light; `COMPOSE_CAUSTIC` and
    /// `COMPOSE_INDIRECT` first clear every node's own light and then set one component alone
    /// (the `caustic` and `indirect` layers, accumulated like the colour).
    pub(super) fn apply_components(
        &self,
        kernels: &GatherStageKernels,
        nodes: &[&GpuBuffer],
        parts: &ComposeParts,
        mode: u32,
        base: FrameParams,
    ) -> Result<(), GpuError> {
        let ctx = &self.ctx;
        let k = &kernels.gather;
        let mode_buffer = uniform_buffer(ctx, "compose mode", &[mode, 0u32, 0, 0]);
        let mut encoder = Encoder::new(ctx);
        let mut keep = Vec::new();
        for (level, &(offset, count)) in nodes.iter().zip(&parts.points.levels) {
            if mode != COMPOSE_ADD {
                let n = (level.size() / std::mem::size_of::<[f32; 8]>() as u64) as u32;
                let params = uniform_buffer(
                    ctx,
                    "params",
                    &FrameParams {
                        ray_count: n,
                        ..base
                    },
                );
                let bind = k
                    .clear_own
                    .bind(ctx, &[("params", &params), ("nodes", level)])?;
                k.clear_own
                    .dispatch(&mut encoder, &bind, k.clear_own.grid_for(ctx, n as u64));
                keep.push(params);
            }
            if count == 0 {
                continue;
            }
            let params = uniform_buffer(
                ctx,
                "params",
                &FrameParams {
                    ray_count: count,
                    ray_offset: offset,
                    ..base
                },
            );
            let bind = k.compose.bind(
                ctx,
                &[
                    ("params", &params),
                    ("compose_mode", &mode_buffer),
                    ("points", &parts.points.buffer),
                    ("nodes", level),
                    ("caustic_density", &parts.caustic),
                    ("indirect", &parts.indirect),
                ],
            )?;
            k.compose
                .dispatch(&mut encoder, &bind, k.compose.grid_for(ctx, count as u64));
            keep.push(params);
        }
        ctx.submit([encoder.finish()]);
        Ok(())
    }
}

/// The cube around the scene's bounding sphere (low corner, side): the frame of the Morton
/// orders that queries are answered in.
fn scene_cube(prepared: &Prepared) -> (glam::Vec3, f32) {
    let (centre, radius) = scene_sphere(prepared);
    (centre - glam::Vec3::splat(radius), 2.0 * radius)
}
