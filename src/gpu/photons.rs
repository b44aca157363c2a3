//! Photon tracing on the GPU as a wavefront (paper 003 listing 6.1): emit, then per bounce
//! trace (the same three-level traversal as camera rays, VD batches included), interact, store
//! and bounce; the GPU twin of `cpu::photons`.
//!
//! Photons go in chunks of [`PHOTON_CHUNK`]. Per bounce of a chunk:
//! 1. `trace_rays` finds the closest hits (and merges the VD bottom level's);
//! 2. `photons/interact.wgsl` decides per ray whether the photon is stored here and whether it
//!    goes on (Russian roulette, mirror, Fresnel-weighted choice at a dielectric), writing a
//!    0/1 flag and a candidate for each;
//! 3. the compaction of the primitives lists the stored candidates and the surviving rays in
//!    photon order; `photons/store.wgsl` appends the stored ones to the map (records and
//!    positions) and `photons/bounce.wgsl` gathers the next bounce's rays.
//!
//! The map's order is (chunk, bounce, photon), as the CPU twin's, so the same photons are
//! stored in the same order up to floating-point differences in their paths. The counts stay on
//! the device: every bounce's kernels are dispatched over the whole chunk, the live ray count
//! is copied into the trace and interact kernels' parameters, the store and bounce kernels read
//! the compactions' counts, and `photons/advance.wgsl` moves the map's cursor. The pass waits
//! for the device once, for the map's size and the hit count; a map that outgrew the buffers
//! kept from earlier frames is traced again into larger ones.

use std::time::Instant;

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use super::context::{GpuContext, GpuError};
use super::core::{GpuCore, TraversalKernels};
use super::encoder::Encoder;
use super::kdtree::KdTreeBuilder;
use super::kernel::{
    read_buffer, stage_words, storage_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel,
    StagedWords,
};
use super::knn::KnnQueries;
use super::maps::{FrameMaps, GpuPhotonMap, MapTree};
use super::pool::GpuBuffer;
use super::prims::CountBuffer;
use super::upload::{frame_params, FrameParams, GpuHit, GpuRay, SceneBuffers};
use super::vd_pipeline::VdFrameGpu;
use crate::accel::photon_estimate::PhotonRecord;
use crate::accel::Prepared;
use crate::render::photons::{
    caustic_targets, photon_emitters, EstimateSettings, PhotonPass, PhotonPassStats, PHOTON_CHUNK,
};
use crate::render::plan::FramePlan;
use crate::render::stats::{PhotonMapStats, ViewSearches};
use crate::render::PhotonViews;
use crate::scene::{Aov, Scene};

/// The state of one photon dispatch. Twin of `PhotonParams` in `shaders/photons/common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct PhotonParams {
    pub ray_count: u32,
    pub emitter_count: u32,
    pub stream_tag: u32,
    pub pass_kind: u32,
    pub max_hits: u32,
    pub bounce: u32,
    pub first_photon: u32,
    /// Caustic targets to aim at (0: photons leave as the light emits).
    pub target_count: u32,
}

/// What a photon ray carries besides the ray: its power and the path flags
/// (`render::photons::PHOTON_*`). Twin of `PhotonPath` in `shaders/photons/common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuPhotonPath {
    pub power: [f32; 3],
    pub flags: u32,
}

/// The photon kernels.
pub struct PhotonKernels {
    emit: Kernel,
    interact: Kernel,
    store: Kernel,
    bounce: Kernel,
    /// Moves the map's cursor past a bounce's stored photons.
    advance: Kernel,
    view_queries: Kernel,
    /// The point kd-tree builder over the maps.
    pub(super) builder: KdTreeBuilder,
    /// The density estimates.
    pub(super) knn: KnnQueries,
    /// The final gather and composition.
    pub(super) gather: super::gather::GatherKernels,
    /// Adaptive seeding.
    pub(super) seeding: super::seeding::SeedingKernels,
    /// Irradiance interpolation.
    pub(super) irradiance: super::irradiance::IrradianceKernels,
    /// Precomputed irradiance at photons.
    pub(super) irradiance_photons: super::irradiance_photons::IrradiancePhotonKernels,
}

impl PhotonKernels {
    /// The kernels photon mapping's second half runs.
    pub(super) fn gather_stage(&self) -> super::gather::GatherStageKernels<'_> {
        super::gather::GatherStageKernels {
            gather: &self.gather,
            seeding: &self.seeding,
            builder: &self.builder,
            knn: &self.knn,
            irradiance: &self.irradiance,
            irradiance_photons: &self.irradiance_photons,
        }
    }
    /// Compiles the kernels, the groups of them side by side on rayon's threads (compiling
    /// is most of a process's first frame).
    pub fn new(ctx: &GpuContext) -> Result<PhotonKernels, GpuError> {
        let kernel =
            |file: &str| Kernel::new(ctx, &format!("photons/{file}"), &[], Checks::Checked);
        let (own, (builder, (knn, (gather, (seeding, (irradiance, irradiance_photons)))))) =
            rayon::join(
                || -> Result<[Kernel; 6], GpuError> {
                    Ok([
                        kernel("emit.wgsl")?,
                        kernel("interact.wgsl")?,
                        kernel("store.wgsl")?,
                        kernel("bounce.wgsl")?,
                        kernel("view_queries.wgsl")?,
                        kernel("advance.wgsl")?,
                    ])
                },
                || {
                    rayon::join(
                        || KdTreeBuilder::new(ctx),
                        || {
                            rayon::join(
                                || KnnQueries::new(ctx),
                                || {
                                    rayon::join(
                                        || super::gather::GatherKernels::new(ctx),
                                        || {
                                            rayon::join(
                                                || super::seeding::SeedingKernels::new(ctx),
                                                || {
                                                    rayon::join(
                                                        || {
                                                            super::irradiance::IrradianceKernels::new(ctx)
                                                        },
                                                        || {
                                                            super::irradiance_photons::IrradiancePhotonKernels::new(ctx)
                                                        },
                                                    )
                                                },
                                            )
                                        },
                                    )
                                },
                            )
                        },
                    )
                },
            );
        let [emit, interact, store, bounce, view_queries, advance] = own?;
        Ok(PhotonKernels {
            emit,
            interact,
            store,
            bounce,
            view_queries,
            advance,
            builder: builder?,
            knn: knn?,
            gather: gather?,
            seeding: seeding?,
            irradiance: irradiance?,
            irradiance_photons: irradiance_photons?,
        })
    }
}

/// The scratch roles of a bounce's photon rays and paths, and of the next bounce's (bounce `b`
/// reads pair `b % 2` and writes pair `(b + 1) % 2`).
const RAY_ROLES: [&str; 2] = ["photon rays (even bounces)", "photon rays (odd bounces)"];
const PATH_ROLES: [&str; 2] = ["photon paths (even bounces)", "photon paths (odd bounces)"];

/// A photon pass recorded and submitted by [`GpuCore::begin_photon_pass`], to be finished by
/// [`GpuCore::finish_photon_pass`].
pub(super) struct PendingPhotonPass {
    recorded: RecordedMap,
    inputs: PassInputs,
    start: Instant,
}

/// A pass's bounces recorded into map buffers: the buffers, and the stored photons and the
/// surface hits staged for one read after the submission `index`.
struct RecordedMap {
    records: GpuBuffer,
    positions: GpuBuffer,
    counts: StagedWords,
    index: wgpu::SubmissionIndex,
}

/// What every chunk of a photon pass reads.
struct PassInputs {
    pass: PhotonPass,
    base: FrameParams,
    emitted: u32,
    emitter_count: u32,
    emitters: GpuBuffer,
    targets: GpuBuffer,
    target_count: u32,
    max_hits: u32,
}

/// The frame's photon maps, traced a step at a time by [`GpuCore::map_step`]: every pass begun
/// (recorded and submitted), then each finished (its size read, the map copied out) with its
/// kd-tree built. A step waits for the device only to finish a pass, whose work was submitted
/// a step or more earlier, so a driver may take the steps while it waits for other work: the
/// device then traces photons where it would have stood idle (`gpu::backend` runs them
/// between the shade trees' levels).
pub(super) struct MapSteps {
    passes: Vec<(PhotonPass, u32)>,
    begun: std::collections::VecDeque<PendingPhotonPass>,
    taken: usize,
    maps: FrameMaps,
    stats: Vec<PhotonMapStats>,
}

impl MapSteps {
    /// The steps of the maps `plan` asks for, none taken.
    pub(super) fn new(plan: &FramePlan, scene: &Scene) -> MapSteps {
        MapSteps {
            passes: plan.photon_passes(scene),
            begun: Default::default(),
            taken: 0,
            maps: FrameMaps::default(),
            stats: Vec::new(),
        }
    }

    /// The maps and their statistics, once every step has been taken.
    pub(super) fn finish(self) -> (FrameMaps, Vec<PhotonMapStats>) {
        debug_assert_eq!(self.taken, 2 * self.passes.len());
        (self.maps, self.stats)
    }
}

/// The stages of a pass's tracing and of its tree.
fn map_stages(pass: PhotonPass) -> (&'static str, &'static str) {
    match pass {
        PhotonPass::Global => ("photons/global", "kdtree/global"),
        PhotonPass::Caustic => ("photons/caustic", "kdtree/caustic"),
    }
}

impl GpuCore {
    /// Traces `count` photons of `pass` into a map on the GPU. The scene is uploaded in
    /// `buffers`; VD patches meet the photons at the frame's levels in `vd` (chosen by the
    /// camera rays first).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn trace_photon_pass(
        &self,
        kernels: &PhotonKernels,
        scene: &Scene,
        prepared: &Prepared,
        buffers: &SceneBuffers,
        traversal: &TraversalKernels,
        vd: &mut Option<VdFrameGpu>,
        pass: PhotonPass,
        count: u32,
    ) -> Result<GpuPhotonMap, GpuError> {
        let pending = self.begin_photon_pass(
            kernels, scene, prepared, buffers, traversal, vd, pass, count,
        )?;
        self.finish_photon_pass(kernels, buffers, traversal, vd, pending)
    }

    /// Records and submits the photon pass's bounces ([`GpuCore::trace_photon_pass`]), without
    /// waiting for them: [`GpuCore::finish_photon_pass`] reads how many photons the map took.
    /// The map is written into buffers of the pass's own roles, so that another pass can be
    /// submitted before this one is finished.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn begin_photon_pass(
        &self,
        kernels: &PhotonKernels,
        scene: &Scene,
        prepared: &Prepared,
        buffers: &SceneBuffers,
        traversal: &TraversalKernels,
        vd: &mut Option<VdFrameGpu>,
        pass: PhotonPass,
        count: u32,
    ) -> Result<PendingPhotonPass, GpuError> {
        let start = Instant::now();
        let ctx = &self.ctx;
        let targets = match pass {
            PhotonPass::Global => Vec::new(),
            PhotonPass::Caustic => caustic_targets(scene, prepared),
        };
        // Without specular instances no photon can make an L S+ D path.
        let count = if pass == PhotonPass::Caustic && targets.is_empty() {
            0
        } else {
            count
        };
        // One zero entry keeps the binding at its element size when there is no target.
        let targets_buffer = if targets.is_empty() {
            storage_buffer(ctx, "caustic targets", &[[0.0f32; 4]])?
        } else {
            storage_buffer(ctx, "caustic targets", &targets)?
        };
        let emitters = photon_emitters(scene, prepared, count);
        let emitted: u32 = emitters.iter().map(|e| e.count).sum();
        let emitters_buffer = storage_buffer(ctx, "photon emitters", &emitters)?;
        let base = frame_params(scene, prepared);
        let max_hits = scene.photons.max_bounces;
        let record_size = std::mem::size_of::<PhotonRecord>() as u64;
        // The bounces write the map straight into buffers kept between frames, with room for
        // what they held before or a guess; a map that needs more is traced again into larger
        // ones (the same photons: every choice is a function of the photon's index). The guess
        // stays within one binding, as the map itself must.
        let most = ctx.info.binding_limit() / record_size;
        let capacity = (emitted as u64 * max_hits.min(3) as u64).min(most);
        let inputs = PassInputs {
            pass,
            base,
            emitted,
            emitter_count: emitters.len() as u32,
            emitters: emitters_buffer,
            targets: targets_buffer,
            target_count: targets.len() as u32,
            max_hits,
        };
        let recorded = self.record_into_map(kernels, buffers, traversal, vd, &inputs, capacity)?;
        Ok(PendingPhotonPass {
            recorded,
            inputs,
            start,
        })
    }

    /// Records the pass's bounces into map buffers with room for `capacity` photons.
    #[allow(clippy::too_many_arguments)]
    fn record_into_map(
        &self,
        kernels: &PhotonKernels,
        buffers: &SceneBuffers,
        traversal: &TraversalKernels,
        vd: &mut Option<VdFrameGpu>,
        inputs: &PassInputs,
        capacity: u64,
    ) -> Result<RecordedMap, GpuError> {
        let record_size = std::mem::size_of::<PhotonRecord>() as u64;
        let [records_role, positions_role] = match inputs.pass {
            PhotonPass::Global => [
                "photon map records (global)",
                "photon map positions (global)",
            ],
            PhotonPass::Caustic => [
                "photon map records (caustic)",
                "photon map positions (caustic)",
            ],
        };
        let map_records = self.scratch(records_role, capacity.max(1) * record_size)?;
        let map_positions = self.scratch(positions_role, capacity.max(1) * 16)?;
        let (counts, index) = self.record_photon_bounces(
            kernels,
            buffers,
            traversal,
            vd,
            inputs,
            &map_records,
            &map_positions,
        )?;
        Ok(RecordedMap {
            records: map_records,
            positions: map_positions,
            counts,
            index,
        })
    }

    /// Waits for the pass begun by [`GpuCore::begin_photon_pass`] (its own submissions, not
    /// those after it), traces it again into larger buffers if the map outgrew them, and copies
    /// the map into buffers of its size.
    pub(super) fn finish_photon_pass(
        &self,
        kernels: &PhotonKernels,
        buffers: &SceneBuffers,
        traversal: &TraversalKernels,
        vd: &mut Option<VdFrameGpu>,
        pending: PendingPhotonPass,
    ) -> Result<GpuPhotonMap, GpuError> {
        let ctx = &self.ctx;
        let record_size = std::mem::size_of::<PhotonRecord>() as u64;
        let PendingPhotonPass {
            mut recorded,
            inputs,
            start,
        } = pending;
        loop {
            let RecordedMap {
                records: map_records,
                positions: map_positions,
                counts,
                index,
            } = recorded;
            let words = counts.read(ctx, index)?;
            let (needed, hits) = (words[0], words[1]);
            let room = (map_records.size() / record_size).min(map_positions.size() / 16);
            if needed as u64 > room {
                check_map_fits(ctx, &inputs, needed as u64)?;
                drop((map_records, map_positions));
                recorded =
                    self.record_into_map(kernels, buffers, traversal, vd, &inputs, needed as u64)?;
                continue;
            }
            let total = needed as u64;
            let records = storage_buffer_sized(ctx, "photon map", total.max(1) * record_size)?;
            let positions = storage_buffer_sized(ctx, "photon positions", total.max(1) * 16)?;
            let mut encoder = Encoder::new(ctx);
            encoder.copy_buffer_to_buffer(&map_records, 0, &records, 0, total * record_size);
            encoder.copy_buffer_to_buffer(&map_positions, 0, &positions, 0, total * 16);
            ctx.submit([encoder.finish()]);
            return Ok(GpuPhotonMap {
                records,
                positions,
                count: needed,
                stats: PhotonPassStats {
                    emitted: inputs.emitted as u64,
                    stored: total,
                    hits: hits as u64,
                    trace_ms: start.elapsed().as_secs_f64() * 1e3,
                },
            });
        }
    }

    /// Records and submits every chunk and bounce of a photon pass, appending the stored
    /// photons to `map_records` / `map_positions` as far as they have room, and stages the
    /// photons the map needs and the surface hits for one read (the pass's one wait for the
    /// device), returning them with the submission to wait for. A bounce's live ray count stays
    /// on the device: it is copied into the parameters of the trace and interact kernels, which
    /// are dispatched over the whole chunk.
    #[allow(clippy::too_many_arguments)]
    fn record_photon_bounces(
        &self,
        kernels: &PhotonKernels,
        buffers: &SceneBuffers,
        traversal: &TraversalKernels,
        vd: &mut Option<VdFrameGpu>,
        inputs: &PassInputs,
        map_records: &GpuBuffer,
        map_positions: &GpuBuffer,
    ) -> Result<(StagedWords, wgpu::SubmissionIndex), GpuError> {
        let ctx = &self.ctx;
        // Photon passes are timed by the device clock per stage, not by the pass timer.
        let timer = &mut None;
        let PassInputs {
            pass,
            base,
            emitted,
            max_hits,
            ..
        } = *inputs;
        let hit_counter = storage_buffer(ctx, "photon hits", &[0u32])?;
        let cursor = storage_buffer(ctx, "photon map cursor", &[0u32])?;
        let ray_size = std::mem::size_of::<GpuRay>() as u64;
        let path_size = std::mem::size_of::<GpuPhotonPath>() as u64;
        let record_size = std::mem::size_of::<PhotonRecord>() as u64;
        let frame_buffer = uniform_buffer(ctx, "params", &base);
        let mut first = 0u32;
        while first < emitted && max_hits > 0 {
            let chunk = PHOTON_CHUNK.min(emitted - first);
            let n = chunk as u64;
            let photon_params = |bounce: u32| PhotonParams {
                ray_count: chunk,
                emitter_count: inputs.emitter_count,
                stream_tag: pass.stream_tag(),
                pass_kind: pass.index(),
                max_hits,
                bounce,
                first_photon: first,
                target_count: inputs.target_count,
            };
            // The rays and paths of a bounce and of the next one alternate between two pairs
            // of buffers kept between frames, as do the per-bounce buffers below (every element
            // a kernel reads is written first in the same bounce; the queue orders the reuse).
            let mut rays = self.scratch(RAY_ROLES[0], n * ray_size)?;
            let mut paths = self.scratch(PATH_ROLES[0], n * path_size)?;
            let emit_params = uniform_buffer(ctx, "photon params", &photon_params(0));
            let bind = self.bind_with_scene(
                &kernels.emit,
                buffers,
                &frame_buffer,
                &[
                    ("photon_params", &emit_params),
                    ("emitters", &inputs.emitters),
                    ("rays", &rays),
                    ("paths", &paths),
                    ("targets", &inputs.targets),
                ],
            )?;
            let mut encoder = Encoder::new(ctx);
            self.dispatch_timed(&mut encoder, &kernels.emit, &bind, n, timer, "photon emit");
            ctx.submit([encoder.finish()]);
            let indices = self.iota(n)?;
            // The live rays of the bounce: the whole chunk, then the survivors' count.
            let mut live: Option<CountBuffer> = None;
            for bounce in 0..max_hits {
                let hits = self.scratch("photon hits", n * std::mem::size_of::<GpuHit>() as u64)?;
                // The bounce in one encoder (one submission without VD patches).
                let mut encoder = Encoder::new(ctx);
                self.trace_rays(
                    &mut encoder,
                    traversal,
                    buffers,
                    FrameParams {
                        ray_count: chunk,
                        ..base
                    },
                    &rays,
                    &hits,
                    live.as_ref().map(|c| (&c.buffer, 0)),
                    vd,
                    timer,
                    "photon trace",
                )?;
                let p = uniform_buffer(ctx, "photon params", &photon_params(bounce));
                if let Some(c) = &live {
                    encoder.copy_buffer_to_buffer(&c.buffer, 0, &p, 0, 4);
                }
                let store_flags = self.scratch("photon store flags", n * 4)?;
                let candidates = self.scratch("photon store candidates", n * record_size)?;
                let bounce_flags = self.scratch("photon bounce flags", n * 4)?;
                let next_rays = self.scratch("next photon rays", n * ray_size)?;
                let next_paths = self.scratch("next photon paths", n * path_size)?;
                let bind = self.bind_with_scene(
                    &kernels.interact,
                    buffers,
                    &frame_buffer,
                    &[
                        ("photon_params", &p),
                        ("rays", &rays),
                        ("hits", &hits),
                        ("paths", &paths),
                        ("store_flags", &store_flags),
                        ("store_candidates", &candidates),
                        ("bounce_flags", &bounce_flags),
                        ("next_rays", &next_rays),
                        ("next_paths", &next_paths),
                        ("hit_counter", &hit_counter),
                    ],
                )?;
                self.dispatch_timed(
                    &mut encoder,
                    &kernels.interact,
                    &bind,
                    n,
                    timer,
                    "photon interact",
                );
                let stored_ids = self.scratch("stored photon ids", n * 4)?;
                let stored_count = self.prims.compact(
                    ctx,
                    &mut encoder,
                    &indices,
                    &store_flags,
                    &stored_ids,
                    chunk,
                )?;
                let next_ids = self.scratch("surviving photon ids", n * 4)?;
                let next_count = self.prims.compact(
                    ctx,
                    &mut encoder,
                    &indices,
                    &bounce_flags,
                    &next_ids,
                    chunk,
                )?;
                let bind = self.bind_with_scene(
                    &kernels.store,
                    buffers,
                    &frame_buffer,
                    &[
                        ("photon_params", &p),
                        ("store_candidates", &candidates),
                        ("selected", &stored_ids),
                        ("selected_count", &stored_count.buffer),
                        ("stored", map_records),
                        ("stored_positions", map_positions),
                        ("map_cursor", &cursor),
                    ],
                )?;
                self.dispatch_timed(
                    &mut encoder,
                    &kernels.store,
                    &bind,
                    n,
                    timer,
                    "photon store",
                );
                let bind = kernels.advance.bind(
                    ctx,
                    &[
                        ("selected_count", &stored_count.buffer),
                        ("map_cursor", &cursor),
                    ],
                )?;
                kernels.advance.dispatch(&mut encoder, &bind, (1, 1, 1));
                if bounce + 1 < max_hits {
                    let next = (bounce as usize + 1) % 2;
                    let rays_out = self.scratch(RAY_ROLES[next], n * ray_size)?;
                    let paths_out = self.scratch(PATH_ROLES[next], n * path_size)?;
                    let bind = self.bind_with_scene(
                        &kernels.bounce,
                        buffers,
                        &frame_buffer,
                        &[
                            ("photon_params", &p),
                            ("next_rays", &next_rays),
                            ("next_paths", &next_paths),
                            ("selected", &next_ids),
                            ("selected_count", &next_count.buffer),
                            ("rays_out", &rays_out),
                            ("paths_out", &paths_out),
                        ],
                    )?;
                    self.dispatch_timed(
                        &mut encoder,
                        &kernels.bounce,
                        &bind,
                        n,
                        timer,
                        "photon bounce",
                    );
                    rays = rays_out;
                    paths = paths_out;
                }
                ctx.submit([encoder.finish()]);
                live = Some(next_count);
            }
            first += chunk;
        }
        let mut encoder = Encoder::new(ctx);
        let staged = stage_words(ctx, &mut encoder, &[(&cursor, 0), (&hit_counter, 0)]);
        let index = ctx.submit([encoder.finish()]);
        Ok((staged, index))
    }

    /// Traces the photon maps `plan` asks for and builds their kd-trees: once per frame,
    /// after the camera rays have chosen the VD levels. Returns the maps and their statistics.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn trace_frame_maps(
        &self,
        kernels: &PhotonKernels,
        scene: &Scene,
        prepared: &Prepared,
        buffers: &SceneBuffers,
        traversal: &TraversalKernels,
        vd: &mut Option<VdFrameGpu>,
        plan: &FramePlan,
        on_trees: &dyn Fn(),
    ) -> Result<(FrameMaps, Vec<PhotonMapStats>), GpuError> {
        let mut steps = MapSteps::new(plan, scene);
        let mut trees_begun = false;
        loop {
            // Every map is submitted: the steps left read them back and build their trees.
            if !trees_begun && steps.taken >= steps.passes.len() {
                on_trees();
                trees_begun = true;
            }
            if !self.map_step(&mut steps, kernels, scene, prepared, buffers, traversal, vd)? {
                break;
            }
        }
        Ok(steps.finish())
    }

    /// Takes the next step of `steps` (see [`MapSteps`]): submits it, under its own stage, and
    /// returns whether there was one. The stage the caller was in is set again afterwards.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn map_step(
        &self,
        steps: &mut MapSteps,
        kernels: &PhotonKernels,
        scene: &Scene,
        prepared: &Prepared,
        buffers: &SceneBuffers,
        traversal: &TraversalKernels,
        vd: &mut Option<VdFrameGpu>,
    ) -> Result<bool, GpuError> {
        let ctx = &self.ctx;
        let passes = steps.passes.len();
        let caller_stage = ctx.stage();
        if steps.taken < passes {
            // Every pass is submitted before the first is finished: the device traces the next
            // map while the host builds the last one's tree. (With VD patches a pass's batches
            // are read back while it is recorded; only its map's size is left to read.)
            let (pass, count) = steps.passes[steps.taken];
            ctx.set_stage(map_stages(pass).0);
            steps.begun.push_back(self.begin_photon_pass(
                kernels, scene, prepared, buffers, traversal, vd, pass, count,
            )?);
        } else if let Some(pending) = steps.begun.pop_front() {
            let (pass, _) = steps.passes[steps.taken - passes];
            let (trace_stage, tree_stage) = map_stages(pass);
            ctx.set_stage(trace_stage);
            let map = self.finish_photon_pass(kernels, buffers, traversal, vd, pending)?;
            let mut map_stats = PhotonMapStats::of(pass, map.stats);
            ctx.set_stage(tree_stage);
            let start = Instant::now();
            let tree = kernels.builder.build(ctx, &map.positions, map.count)?;
            map_stats.tree_build_ms = Some(start.elapsed().as_secs_f64() * 1e3);
            steps.stats.push(map_stats);
            let slot = MapTree { map, tree };
            match pass {
                PhotonPass::Global => steps.maps.global = Some(slot),
                PhotonPass::Caustic => steps.maps.caustic = Some(slot),
            }
        } else {
            return Ok(false);
        }
        steps.taken += 1;
        ctx.set_stage(caller_stage);
        Ok(true)
    }

    /// The photon maps' debug views on the GPU (twin of `cpu::compose::photon_views`) for one
    /// pass: the flux density of the frame's `maps` at the first diffuse surface of each camera
    /// ray (`rays`, `hits`: `ray_count` camera slots), over the frame's spp. Returns the views
    /// and, per map, its density searches and their rate per second.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn photon_views(
        &self,
        kernels: &PhotonKernels,
        scene: &Scene,
        prepared: &Prepared,
        buffers: &SceneBuffers,
        maps: &FrameMaps,
        rays: &GpuBuffer,
        hits: &GpuBuffer,
        ray_count: u64,
    ) -> Result<(PhotonViews, Vec<ViewSearches>), GpuError> {
        let ctx = &self.ctx;
        let mut views = PhotonViews::default();
        let mut stats = Vec::new();
        let wanted = [
            (Aov::PhotonsGlobal, PhotonPass::Global),
            (Aov::PhotonsCaustic, PhotonPass::Caustic),
        ];
        if !wanted
            .iter()
            .any(|(aov, _)| scene.output.layers.contains(aov))
        {
            return Ok((views, stats));
        }
        // The camera rays' diffuse hits as density queries, read back and packed densely.
        let base = frame_params(scene, prepared);
        let params = uniform_buffer(
            ctx,
            "params",
            &FrameParams {
                ray_count: ray_count as u32,
                ..base
            },
        );
        let queries = storage_buffer_sized(ctx, "view queries", ray_count * 32)?;
        let weights = storage_buffer_sized(ctx, "view weights", ray_count * 16)?;
        let bind = self.bind_with_scene(
            &kernels.view_queries,
            buffers,
            &params,
            &[
                ("rays", rays),
                ("hits", hits),
                ("queries", &queries),
                ("weights", &weights),
            ],
        )?;
        let mut encoder = Encoder::new(ctx);
        self.dispatch_timed(
            &mut encoder,
            &kernels.view_queries,
            &bind,
            ray_count,
            &mut None,
            "view",
        );
        ctx.submit([encoder.finish()]);
        let all_queries: Vec<[f32; 4]> = read_buffer(ctx, &queries, ray_count as usize * 2)?;
        let all_weights: Vec<[f32; 4]> = read_buffer(ctx, &weights, ray_count as usize)?;
        let all_rays: Vec<GpuRay> = read_buffer(ctx, rays, ray_count as usize)?;
        let mut dense = Vec::new();
        let mut owners = Vec::new();
        for (i, w) in all_weights.iter().enumerate() {
            if w[3] > 0.0 {
                dense.push(all_queries[2 * i]);
                dense.push(all_queries[2 * i + 1]);
                owners.push(i);
            }
        }
        let dense_buffer = storage_buffer(ctx, "view queries", &dense)?;
        let settings = EstimateSettings::of(scene, prepared);
        let pixels = (scene.film.width.max(1) * scene.film.height.max(1)) as usize;
        let spp = scene.film.spp.max(1) as f32;
        for (aov, pass) in wanted {
            if !scene.output.layers.contains(&aov) {
                continue;
            }
            let Some(MapTree { map, tree }) = maps.get(pass) else {
                continue;
            };
            let name = pass.name();
            let (dispatch, output) = kernels.knn.prepare_density(
                ctx,
                tree,
                &map.records,
                &dense_buffer,
                0,
                owners.len() as u32,
                settings.k as u32,
                settings.max_dist2,
                settings.filter,
                None,
            )?;
            let start = Instant::now();
            let mut encoder = Encoder::new(ctx);
            dispatch.record(&mut encoder, None);
            ctx.submit([encoder.finish()]);
            let densities: Vec<[f32; 4]> = read_buffer(ctx, &output.density, owners.len())?;
            let seconds = start.elapsed().as_secs_f64();
            let status: Vec<u32> = read_buffer(ctx, &output.status, 1)?;
            if status[0] != 0 {
                return Err(GpuError::Device(format!(
                    "the {name} photon map's density estimates failed (kNN status {})",
                    status[0]
                )));
            }
            stats.push((
                pass,
                owners.len() as u64,
                owners.len() as f64 / seconds.max(1e-9),
            ));
            let mut view = vec![Vec3::ZERO; pixels];
            for (&slot, d) in owners.iter().zip(&densities) {
                let pixel = all_rays[slot].pixel as usize;
                let w = all_weights[slot];
                if pixel < pixels {
                    view[pixel] += Vec3::new(w[0], w[1], w[2]) * Vec3::new(d[0], d[1], d[2]) / spp;
                }
            }
            match pass {
                PhotonPass::Global => views.global = view,
                PhotonPass::Caustic => views.caustic = view,
            }
        }
        Ok((views, stats))
    }
}

/// A map must fit one storage binding (its kd-tree and queries read it whole): a pass that
/// stores more photons is refused before any larger buffer is made, naming how many it stored
/// and how many photons to emit instead. The pass has been traced once by then: how many
/// photons a pass stores is known only from tracing it (they may escape, or bounce many times).
fn check_map_fits(ctx: &GpuContext, inputs: &PassInputs, stored: u64) -> Result<(), GpuError> {
    let limit = ctx.info.binding_limit();
    let most = limit / std::mem::size_of::<PhotonRecord>() as u64;
    if stored <= most {
        return Ok(());
    }
    let emitted = inputs.emitted as u64;
    Err(GpuError::PhotonMapTooLarge {
        map: match inputs.pass {
            PhotonPass::Global => "global",
            PhotonPass::Caustic => "caustic",
        },
        stored,
        emitted,
        most,
        limit,
        fits: (emitted as u128 * most as u128 / stored as u128) as u64,
    })
}
