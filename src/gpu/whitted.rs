//! The Whitted ray tracer on the GPU as a wavefront that builds shade trees and evaluates them
//! bottom-up (paper 003 sections 5.1.2-5.1.3); the GPU twin of `cpu::whitted`. These are
//! stages of `GpuCore` with their own kernels ([`WhittedKernels`]); `gpu::backend` runs them
//! once per pass of a frame (`render::plan`).
//!
//! Ray `i` of bounce `L` is node `i` of level `L` of the shade trees (`GpuShadeNode`, 32 bytes:
//! the hit state in 2 bits with the index of the first child in the next level, the node's own
//! light, a weight and the Fresnel coefficient). Stages per frame (one WGSL kernel each, under
//! `shaders/whitted/`):
//! 1. `primary`: one ray per (pixel, sample) of the pass, threads mapped to pixels in 8×8
//!    Morton tiles;
//! 2. `trace`: the fused two-level QBVH traversal with the compact stack (closest hit);
//! 3. per chunk of the level (the chunks bound the shadow slots to one storage binding):
//!    `shade` writes each ray's node, its shadow rays into its own `shadows_per_hit` slots (the
//!    chunk's k-th shadow rays side by side, row k of the slots) and
//!    its child rays as candidates `2i` (reflected) and `2i + 1` (refracted), each with a 0/1
//!    flag; the compaction of the data-parallel primitives (`Primitives::compact`) lists the used
//!    shadow slots in order; `shadow` traces them and zeroes the blocked ones; `direct` sums each
//!    diffuse node's slots into its own light;
//! 4. `spawn`: an exclusive scan of the child flags (`Primitives::exclusive_scan`) gives each
//!    child its index in the next level, stable in the parents' order, so a dielectric's two
//!    children sit next to each other; `spawn` scatters them and links the parent to the first;
//!
//! then 2–4 again for each specular bounce up to `film.max_depth`, and at last:
//! 5. `accumulate`, level by level from the deepest: a node's colour is its own light plus its
//!    children's colours times their weights (`fresnel`, `(1 - fresnel) · tint`, reflectance);
//! 6. `resolve`: one invocation per pixel of the pass adds its pass samples' camera nodes over
//!    the frame's `spp` into the film.
//!
//! Every sum has one writer and a fixed order (a shadow ray owns its slot, a node sums its slots
//! and its children in index order, a pixel its samples), so the image is the same bit for bit
//! from run to run without float or integer atomics.
//!
//! Random numbers: each ray carries the next dimension of its (pixel, sample) stream. Camera
//! rays, mirror chains and the reflected branch of a dielectric read the same numbers as the CPU;
//! the refracted branch of a dielectric continues at the dimension of its parent, while the CPU's
//! recursion continues after the reflected branch's numbers, so quad-light samples seen through
//! a refraction use other (equally distributed) numbers than the CPU.

use rayon::prelude::*;

use super::context::{GpuContext, GpuError};
use super::core::{GpuCore, ShadeLevel, Timer, TraversalKernels};
use super::encoder::Encoder;
use super::kernel::{
    read_buffer, stage_words, storage_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel,
};
use super::pool::GpuBuffer;
use super::prims::CountBuffer;
use super::tree_sizes::{counted_room, LevelCount, TreeCounts, TreeSizes};
use super::upload::{
    FrameParams, GpuFirstHit, GpuHit, GpuRay, GpuShadeNode, GpuShadingPoint, GpuShadowRay,
    SceneBuffers, NONE,
};
use super::vd_pipeline::VdFrameGpu;
use crate::render::plan::{tile_count, PassPlan};

/// The most child candidates of one level: a node's link holds its first child's index in 30
/// bits (`NODE_CHILD_MASK` in `shaders/shared/types.wgsl`).
const NODE_CHILD_LIMIT: u32 = 1 << 30;

/// A pass's shade trees ([`GpuCore::shade_trees`]): the levels, camera level first, the camera
/// rays' first hits, the shadow rays' counts (for the statistics: read at the frame's end, so
/// that the trees do not wait for them) and the levels' counts.
pub(super) struct ShadeTrees {
    pub(super) levels: Vec<ShadeLevel>,
    pub(super) first_hits: GpuBuffer,
    pub(super) shadow_counts: Vec<CountBuffer>,
    pub(super) counts: TreeCounts,
}

/// The Whitted stage's own kernels (`shaders/whitted/`; the traversal kernels are
/// [`TraversalKernels`]).
pub struct WhittedKernels {
    primary: Kernel,
    direct: Kernel,
    spawn: Kernel,
    accumulate: Kernel,
    resolve: Kernel,
    resolve_aovs: Kernel,
}

impl WhittedKernels {
    /// Compiles the kernels side by side on rayon's threads.
    pub fn new(ctx: &GpuContext) -> Result<WhittedKernels, GpuError> {
        let names = [
            "primary",
            "direct",
            "spawn",
            "accumulate",
            "resolve",
            "resolve_aovs",
        ];
        let kernels = names
            .par_iter()
            .map(|n| Kernel::new(ctx, &format!("whitted/{n}.wgsl"), &[], Checks::Checked))
            .collect::<Result<Vec<Kernel>, GpuError>>()?;
        let [primary, direct, spawn, accumulate, resolve, resolve_aovs]: [Kernel; 6] = kernels
            .try_into()
            .map_err(|_| GpuError::Device("the Whitted kernels did not all compile".into()))?;
        Ok(WhittedKernels {
            primary,
            direct,
            spawn,
            accumulate,
            resolve,
            resolve_aovs,
        })
    }
}

impl GpuCore {
    /// Generates the camera rays of one pass (`params` from [`pass_params`], `slots` the pass's
    /// camera-ray slots), or with `centre_rays` one through each pixel centre and the lens
    /// centre, and traces them: the rays and their closest hits, slot by slot. Until
    /// `vd.chosen` is set, the trace chooses the frame's VD levels from these rays.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn primary_rays_and_hits(
        &self,
        w: &WhittedKernels,
        kernels: &TraversalKernels,
        scene_buffers: &SceneBuffers,
        mut params: FrameParams,
        slots: u64,
        centre_rays: bool,
        vd: &mut Option<VdFrameGpu>,
        timer: &mut Option<Timer>,
    ) -> Result<(GpuBuffer, GpuBuffer, u64), GpuError> {
        let ray_count = u32::try_from(slots).map_err(|_| {
            GpuError::Device(format!(
                "{slots} camera rays are more than 32-bit indices address"
            ))
        })?;
        params.ray_count = ray_count;
        params.centre_rays = centre_rays as u32;
        let params_buffer = uniform_buffer(&self.ctx, "params", &params);
        let rays = storage_buffer_sized(
            &self.ctx,
            "camera rays",
            slots * std::mem::size_of::<GpuRay>() as u64,
        )?;
        let hits = storage_buffer_sized(
            &self.ctx,
            "camera hits",
            slots * std::mem::size_of::<GpuHit>() as u64,
        )?;
        let primary_bind = w
            .primary
            .bind(&self.ctx, &[("params", &params_buffer), ("rays", &rays)])?;
        let mut encoder = Encoder::new(&self.ctx);
        self.dispatch_timed(
            &mut encoder,
            &w.primary,
            &primary_bind,
            slots,
            timer,
            "primary",
        );
        self.trace_rays(
            &mut encoder,
            kernels,
            scene_buffers,
            params,
            &rays,
            &hits,
            None,
            vd,
            timer,
            "primary trace",
        )?;
        self.ctx.submit([encoder.finish()]);
        Ok((rays, hits, slots))
    }

    /// Chooses the frame's VD levels from every camera sample of `passes` (the CPU twin's
    /// rule) by tracing each pass's camera rays once, unless they are chosen already. Nothing
    /// to do without VD patches.
    pub(super) fn choose_vd_levels<'a>(
        &self,
        w: &WhittedKernels,
        kernels: &TraversalKernels,
        buffers: &SceneBuffers,
        base: FrameParams,
        passes: impl IntoIterator<Item = &'a PassPlan>,
        vd: &mut Option<VdFrameGpu>,
    ) -> Result<(), GpuError> {
        if vd.as_ref().is_none_or(|v| v.chosen) {
            return Ok(());
        }
        for pass in passes {
            let params = pass_params(base, pass);
            self.primary_rays_and_hits(
                w,
                kernels,
                buffers,
                params,
                pass.ray_slots(),
                false,
                vd,
                &mut None,
            )?;
        }
        if let Some(v) = vd.as_mut() {
            v.chosen = true;
        }
        Ok(())
    }

    /// [`GpuBackend::primary_hit_ids`] with the scene uploaded and the VD levels chosen.
    pub(super) fn centre_hit_ids(
        &self,
        w: &WhittedKernels,
        kernels: &TraversalKernels,
        buffers: &SceneBuffers,
        base: FrameParams,
        vd: &mut Option<VdFrameGpu>,
    ) -> Result<Vec<[f32; 2]>, GpuError> {
        let whole = PassPlan {
            sample_start: 0,
            samples: 1,
            tile_start: 0,
            tiles: tile_count(base.width, base.height),
        };
        let params = pass_params(base, &whole);
        let (rays, hits, slots) = self.primary_rays_and_hits(
            w,
            kernels,
            buffers,
            params,
            whole.ray_slots(),
            true,
            vd,
            &mut None,
        )?;
        let rays: Vec<GpuRay> = read_buffer(&self.ctx, &rays, slots as usize)?;
        let hits: Vec<GpuHit> = read_buffer(&self.ctx, &hits, slots as usize)?;
        let mut ids = vec![[-1.0f32; 2]; (base.width * base.height) as usize];
        for (ray, hit) in rays.iter().zip(&hits) {
            if ray.pixel != NONE && hit.instance != NONE {
                ids[ray.pixel as usize] = [hit.instance as f32, hit.prim as f32];
            }
        }
        Ok(ids)
    }

    /// Adds a pass's first hits to the first-hit layer sums `sums`: albedo, shading normal,
    /// geometric normal, position (`resolve_aovs`; the coverage is the film's, in `resolve`).
    pub(super) fn resolve_aovs(
        &self,
        w: &WhittedKernels,
        first_hits: &GpuBuffer,
        params: FrameParams,
        slots: u64,
        sums: [&GpuBuffer; 4],
    ) -> Result<(), GpuError> {
        let ctx = &self.ctx;
        let params_buffer = uniform_buffer(
            ctx,
            "params",
            &FrameParams {
                ray_count: slots as u32,
                ..params
            },
        );
        let bind = w.resolve_aovs.bind(
            ctx,
            &[
                ("params", &params_buffer),
                ("first_hits", first_hits),
                ("albedo_sum", sums[0]),
                ("normal_sum", sums[1]),
                ("geometric_sum", sums[2]),
                ("position_sum", sums[3]),
            ],
        )?;
        let mut encoder = Encoder::new(ctx);
        let pixels = (params.width * params.height) as u64;
        w.resolve_aovs
            .dispatch(&mut encoder, &bind, w.resolve_aovs.grid_for(ctx, pixels));
        ctx.submit([encoder.finish()]);
        Ok(())
    }

    /// The shade trees' bottom-up accumulation, deepest level first, then the pass's camera
    /// nodes into the film (each pixel gains the sum of its pass samples over the frame's spp,
    /// and in w how many of them hit something, from `first_hits`): `levels` are nodes and node
    /// count per level, camera level first; `params` the pass's. The node buffers end up
    /// holding colours.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn accumulate_and_resolve(
        &self,
        w: &WhittedKernels,
        levels: &[(GpuBuffer, u64)],
        first_hits: &GpuBuffer,
        params: FrameParams,
        film: &GpuBuffer,
        timer: &mut Option<Timer>,
    ) -> Result<(), GpuError> {
        let ctx = &self.ctx;
        let pixels = (params.width * params.height) as u64;
        let mut encoder = Encoder::new(ctx);
        let mut level_params = Vec::new();
        for pair in levels.windows(2).rev() {
            let (nodes, count, child_nodes) = (&pair[0].0, &pair[0].1, &pair[1].0);
            let params_buffer = uniform_buffer(
                ctx,
                "params",
                &FrameParams {
                    ray_count: *count as u32,
                    ..params
                },
            );
            let bind = w.accumulate.bind(
                ctx,
                &[
                    ("params", &params_buffer),
                    ("nodes", nodes),
                    ("child_nodes", child_nodes),
                ],
            )?;
            self.dispatch_timed(
                &mut encoder,
                &w.accumulate,
                &bind,
                *count,
                timer,
                "accumulate",
            );
            level_params.push(params_buffer);
        }
        let resolve_params = uniform_buffer(
            ctx,
            "params",
            &FrameParams {
                ray_count: levels[0].1 as u32,
                ..params
            },
        );
        let resolve_bind = w.resolve.bind(
            ctx,
            &[
                ("params", &resolve_params),
                ("nodes", &levels[0].0),
                ("first_hits", first_hits),
                ("pixels", film),
            ],
        )?;
        self.dispatch_timed(
            &mut encoder,
            &w.resolve,
            &resolve_bind,
            pixels,
            timer,
            "accumulate",
        );
        ctx.submit([encoder.finish()]);
        Ok(())
    }

    /// The shade trees of one pass (stages 2-4 of the module docs): each level's `shade`, its
    /// shadow rays in chunks that fit a binding (with the VD batches), `direct`, and the
    /// children placed by a scan and `spawn`, traced as the next level, until no ray is left or
    /// `max_depth`. A level's room (the slots its kernels run over; shade.wgsl turns those past
    /// its rays into empty leaves) is more than its rays, so that a frame sized from this one
    /// asks for the same buffers. With `sizes` (and no VD patches) the levels take their room
    /// from them and are recorded without reading any count: the frame's end checks that each
    /// level's children fitted. Otherwise the host reads each level's child count before the
    /// next, and the levels past the last with rays get the tail's room (`gpu::tree_sizes`).
    /// After each level's spawn `meanwhile` may submit work of its own, which the device runs
    /// while the host waits and records the next level.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn shade_trees(
        &self,
        w: &WhittedKernels,
        kernels: &TraversalKernels,
        buffers: &SceneBuffers,
        base: FrameParams,
        camera: (GpuBuffer, GpuBuffer, u64),
        vd: &mut Option<VdFrameGpu>,
        timer: &mut Option<Timer>,
        sizes: Option<&TreeSizes>,
        meanwhile: &mut dyn FnMut() -> Result<(), GpuError>,
    ) -> Result<ShadeTrees, GpuError> {
        let ctx = &self.ctx;
        let (mut rays, mut hits, mut ray_count) = camera;
        // The room of each level after the camera's, when sized from an earlier frame.
        let rooms = sizes
            .filter(|s| vd.is_none() && s.max_depth == base.max_depth)
            .map(|s| s.rooms(ray_count));
        let mut counts = TreeCounts {
            camera: ray_count,
            children: Vec::new(),
            sized: rooms.is_some(),
        };
        // Levels without children so far (the tail's, when the counts are read).
        let mut empty_levels = 0;
        // How many of the level's slots hold rays (shade.wgsl's `level_count`).
        let mut level_count = storage_buffer(
            ctx,
            "camera ray count",
            &[u32::try_from(ray_count).unwrap_or(u32::MAX), 0, 0, 0],
        )?;
        let first_hits = storage_buffer_sized(
            ctx,
            "first hits",
            ray_count * std::mem::size_of::<GpuFirstHit>() as u64,
        )?;

        // Chunks of a level whose shadow slots fit one storage binding.
        let per_hit = base.shadows_per_hit.max(1) as u64;
        let shadow_size = std::mem::size_of::<GpuShadowRay>() as u64;
        let limit = ctx.info.binding_limit();
        let chunk_rays = ((limit / (shadow_size * per_hit)) / 64 * 64).clamp(64, 1 << 20);
        // The levels of the shade trees, camera nodes first: nodes, node count, and the
        // shading point of each diffuse node.
        let mut levels: Vec<ShadeLevel> = Vec::new();
        let mut shadow_counts: Vec<CountBuffer> = Vec::new();
        let mut bounce = 0u32;
        loop {
            let level_rays = u32::try_from(ray_count * 2)
                .ok()
                .filter(|&n| n <= NODE_CHILD_LIMIT)
                .ok_or_else(|| GpuError::BufferTooLarge {
                    what: format!("{ray_count} rays of one bounce (shade-tree links)"),
                    size: ray_count * 2,
                    limit: NODE_CHILD_LIMIT as u64,
                })?;
            let nodes = storage_buffer_sized(
                ctx,
                "shade nodes",
                ray_count * std::mem::size_of::<GpuShadeNode>() as u64,
            )?;
            let child_candidates = self.scratch(
                "child candidates",
                level_rays as u64 * std::mem::size_of::<GpuRay>() as u64,
            )?;
            let child_flags = self.scratch("child flags", level_rays as u64 * 4)?;
            let diffuse_points = storage_buffer_sized(
                ctx,
                "diffuse points",
                ray_count * std::mem::size_of::<GpuShadingPoint>() as u64,
            )?;
            let shadow_slots_len = ray_count.min(chunk_rays) * per_hit;
            let shadow_rays = self.scratch("shadow rays", shadow_slots_len * shadow_size)?;
            let shadow_flags = self.scratch("shadow flags", shadow_slots_len * 4)?;
            let shadow_slots = self.scratch("shadow slots", shadow_slots_len * 4)?;
            let slot_indices = self.iota(shadow_slots_len)?;
            let mut params = base;
            params.ray_count = ray_count as u32;
            params.bounce = bounce;
            params.ray_capacity = level_rays;
            params.shadow_capacity = shadow_slots_len as u32;
            params.shadows_per_hit = per_hit as u32;
            let params_buffer = uniform_buffer(ctx, "params", &params);
            let shade_bind = self.bind_with_scene(
                &kernels.shade,
                buffers,
                &params_buffer,
                &[
                    ("rays", &rays),
                    ("hits", &hits),
                    ("nodes", &nodes),
                    ("child_candidates", &child_candidates),
                    ("child_flags", &child_flags),
                    ("shadow_rays", &shadow_rays),
                    ("shadow_flags", &shadow_flags),
                    ("first_hits", &first_hits),
                    ("diffuse_points", &diffuse_points),
                    ("level_count", &level_count),
                ],
            )?;
            // The level's shadow rays, counted by `direct` over its chunks (the statistics).
            let shadow_total = CountBuffer::new(ctx, "shadow rays of the level");
            let direct_bind = w.direct.bind(
                ctx,
                &[
                    ("params", &params_buffer),
                    ("nodes", &nodes),
                    ("shadow_rays", &shadow_rays),
                    ("shadow_flags", &shadow_flags),
                    ("shadow_total", &shadow_total.buffer),
                ],
            )?;
            let mut offset = 0u64;
            while offset < ray_count {
                let n = chunk_rays.min(ray_count - offset);
                let write_params = |vd_record_capacity: u32| {
                    ctx.write_buffer(
                        &params_buffer,
                        0,
                        bytemuck::bytes_of(&FrameParams {
                            ray_offset: offset as u32,
                            vd_record_capacity,
                            ..params
                        }),
                    );
                };
                write_params(vd.as_ref().map_or(0, |v| v.capacity()));
                let mut encoder = Encoder::new(ctx);
                if let Some(v) = vd.as_ref() {
                    v.clear(&mut encoder);
                }
                self.dispatch_timed(&mut encoder, &kernels.shade, &shade_bind, n, timer, "shade");
                // With VD patches (whose batches take the traced rays densely), DiffuseHits: the
                // used shadow slots, densely and in node order. Without, every slot of the chunk,
                // the unused ones returning at once in `shadow` (the chunk's k-th rays lie
                // side by side, so a workgroup's slots are mostly all used or all not).
                let (traced, shadow_count) = if vd.is_some() {
                    let count = self.prims.compact(
                        ctx,
                        &mut encoder,
                        &slot_indices,
                        &shadow_flags,
                        &shadow_slots,
                        (n * per_hit) as u32,
                    )?;
                    (&shadow_slots, count.buffer)
                } else {
                    let all = [(n * per_hit) as u32, 0, 0, 0];
                    (
                        &slot_indices,
                        storage_buffer(ctx, "shadow slots of the chunk", &all)?,
                    )
                };
                let shadow_bind = |vd: Option<&VdFrameGpu>| {
                    let mut own: Vec<(&str, &GpuBuffer)> = vec![
                        ("shadow_rays", &shadow_rays),
                        ("shadow_flags", &shadow_flags),
                        ("shadow_slots", traced),
                        ("shadow_count", &shadow_count),
                    ];
                    if let Some(v) = vd {
                        own.extend(v.record_bindings());
                    }
                    self.bind_with_scene(&kernels.shadow, buffers, &params_buffer, &own)
                };
                self.dispatch_timed(
                    &mut encoder,
                    &kernels.shadow,
                    &shadow_bind(vd.as_ref())?,
                    n * per_hit,
                    timer,
                    "shadow",
                );
                if let Some(v) = vd.as_mut() {
                    // The VD patches the unblocked shadow rays reach: the bottom level, then
                    // vd_shadow zeroes the blocked slots before direct sums them.
                    ctx.submit([encoder.finish()]);
                    let count = loop {
                        if let Some(count) = v.take_count(ctx)? {
                            break count;
                        }
                        // The queue grew: trace the chunk's shadow rays again into it.
                        write_params(v.capacity());
                        let mut encoder = Encoder::new(ctx);
                        v.clear(&mut encoder);
                        let bind = shadow_bind(Some(&*v))?;
                        self.dispatch_timed(
                            &mut encoder,
                            &kernels.shadow,
                            &bind,
                            n * per_hit,
                            timer,
                            "shadow",
                        );
                        ctx.submit([encoder.finish()]);
                    };
                    let vd_shadow = &v.kernels().shadow;
                    v.run_batch(
                        ctx,
                        &self.prims,
                        count,
                        (n * per_hit) as u32,
                        |encoder, out, _| {
                            let bind = self.bind_with_scene(
                                vd_shadow,
                                buffers,
                                &params_buffer,
                                &[
                                    ("shadow_rays", &shadow_rays),
                                    ("shadow_slots", &shadow_slots),
                                    ("shadow_count", &shadow_count),
                                    ("vd_hits", &out.hits),
                                ],
                            )?;
                            vd_shadow.dispatch(
                                encoder,
                                &bind,
                                vd_shadow.grid_for(ctx, n * per_hit),
                            );
                            Ok(())
                        },
                    )?;
                    encoder = Encoder::new(ctx);
                }
                self.dispatch_timed(&mut encoder, &w.direct, &direct_bind, n, timer, "direct");
                // No wait: the next chunk's parameters are written after this submission on
                // the queue, and the shadow counts are read once, after every chunk.
                ctx.submit([encoder.finish()]);
                offset += n;
            }
            shadow_counts.push(shadow_total);
            // NumBouncedRays / TwoBouncedRaysFlags: the scan of the child flags places the
            // children of the level, in their parents' order.
            let mut spawned = 0u64;
            // Without VD patches, the next level's trace is submitted before the child count
            // is read (or without reading it, with rooms), over room for every candidate with
            // the count taken on the device: the host waits for the spawn only, if at all, and
            // records the next level while the trace runs.
            let mut traced_next: Option<GpuBuffer> = None;
            if bounce < base.max_depth {
                let child_positions = self.scratch("child positions", level_rays as u64 * 4)?;
                let next_rays = storage_buffer_sized(
                    ctx,
                    "next rays",
                    level_rays as u64 * std::mem::size_of::<GpuRay>() as u64,
                )?;
                let child_count = CountBuffer::new(ctx, "child count");
                let mut encoder = Encoder::new(ctx);
                ctx.write_buffer(
                    &params_buffer,
                    0,
                    bytemuck::bytes_of(&FrameParams {
                        ray_offset: 0,
                        ..params
                    }),
                );
                self.prims.exclusive_scan(
                    ctx,
                    &mut encoder,
                    &child_flags,
                    &child_positions,
                    level_rays,
                )?;
                let spawn_bind = w.spawn.bind(
                    ctx,
                    &[
                        ("params", &params_buffer),
                        ("nodes", &nodes),
                        ("child_candidates", &child_candidates),
                        ("child_flags", &child_flags),
                        ("child_positions", &child_positions),
                        ("next_rays", &next_rays),
                        ("child_count", &child_count.buffer),
                    ],
                )?;
                self.dispatch_timed(
                    &mut encoder,
                    &w.spawn,
                    &spawn_bind,
                    ray_count,
                    timer,
                    "spawn",
                );
                // Without rooms, the count comes back to the host.
                let staged = rooms
                    .is_none()
                    .then(|| stage_words(ctx, &mut encoder, &[(&child_count.buffer, 0)]));
                let spawn_index = ctx.submit([encoder.finish()]);
                if vd.is_none() {
                    let live = (level_rays, Some(&child_count.buffer));
                    traced_next = Some(
                        self.trace_level(kernels, buffers, base, &next_rays, live, vd, timer)?,
                    );
                }
                meanwhile()?;
                // The next level's room: the sizes', or from the count read.
                let (count, room) = match staged {
                    None => {
                        let room = rooms
                            .as_ref()
                            .and_then(|r| r.get(bounce as usize).copied())
                            .unwrap_or(0);
                        (LevelCount::Device(child_count.buffer.clone()), room)
                    }
                    Some(staged) => {
                        let n = staged.read(ctx, spawn_index)?[0] as u64;
                        // With VD patches (whose levels are never sized) the trees end at the
                        // first level without children; without, the levels past it get the
                        // tail's room, as a frame sized from this one will.
                        let room = match n {
                            0 if vd.is_some() => 0,
                            n => counted_room(n, counts.camera, ray_count, empty_levels),
                        };
                        empty_levels += usize::from(n == 0);
                        (LevelCount::Known(n), room)
                    }
                };
                counts.children.push((count, room));
                spawned = room;
                level_count = child_count.buffer;
                rays = next_rays;
            }
            levels.push(ShadeLevel {
                nodes,
                count: ray_count,
                points: diffuse_points,
            });
            bounce += 1;
            if spawned == 0 || bounce > base.max_depth {
                break;
            }
            // The spawned rays are the next level; trace them (unless that was done above).
            hits = match traced_next {
                Some(next_hits) => next_hits,
                None => {
                    let count = (spawned as u32, Some(&level_count));
                    self.trace_level(kernels, buffers, base, &rays, count, vd, timer)?
                }
            };
            ray_count = spawned;
        }
        Ok(ShadeTrees {
            levels,
            first_hits,
            shadow_counts,
            counts,
        })
    }

    /// Traces a shade-tree level's rays into fresh hits and submits: `count` rays, or, with a
    /// live count, `count` slots of which the device buffer's first word says how many hold
    /// rays.
    #[allow(clippy::too_many_arguments)]
    fn trace_level(
        &self,
        kernels: &TraversalKernels,
        buffers: &SceneBuffers,
        base: FrameParams,
        rays: &GpuBuffer,
        (count, live): (u32, Option<&GpuBuffer>),
        vd: &mut Option<VdFrameGpu>,
        timer: &mut Option<Timer>,
    ) -> Result<GpuBuffer, GpuError> {
        let ctx = &self.ctx;
        let hits = storage_buffer_sized(
            ctx,
            "hits",
            count as u64 * std::mem::size_of::<GpuHit>() as u64,
        )?;
        let mut encoder = Encoder::new(ctx);
        let params = FrameParams {
            ray_count: count,
            ..base
        };
        self.trace_rays(
            &mut encoder,
            kernels,
            buffers,
            params,
            rays,
            &hits,
            live.map(|b| (b, 0)),
            vd,
            timer,
            "trace",
        )?;
        ctx.submit([encoder.finish()]);
        Ok(hits)
    }
}

/// `base` with the sample and tile offsets of `pass`.
pub(super) fn pass_params(base: FrameParams, pass: &PassPlan) -> FrameParams {
    FrameParams {
        sample_offset: pass.sample_start,
        pass_spp: pass.samples,
        tile_offset: pass.tile_start,
        ..base
    }
}
