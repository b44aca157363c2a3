//! The adaptive seeding of irradiance samples on the GPU (paper 003 section 6.2.3.1, listings
//! 6.6–6.11): the twin of [`cpu::gather::seed_irradiance_samples`](crate::cpu::gather), which
//! chooses the same seeds, in the same order, bit for bit.
//!
//! The stages, in `shaders/seeding/*.wgsl`:
//!
//! 1. **Codes and sort**: `codes` writes every shading point's Morton code in the `2^levels`
//!    screen quadtree and its index; a stable radix sort (`Primitives::radix_sort_u32` over
//!    `2·levels` bits) orders them as the CPU's sort by (code, index); `gather` writes the points'
//!    fixed-point keys (`cpu::gather::SeedPoint`) in sorted order.
//! 2. **Levels, bottom-up**: the leaves are the runs of equal codes
//!    (`Primitives::find_sorted_bounds`); each level above is the runs of equal child keys
//!    shifted right by two bits (`parent_keys`, then the same search over the children). The
//!    leaves and every level above are recorded in one submission: a level's kernels cover the
//!    most nodes it can have (`min(n, 4^level)`) and take the level below's count on the device
//!    (`Primitives::find_sorted_bounds_live`), and all the counts come back in one read.
//! 3. **Node table**: nodes are numbered level by level from the root; `link` (one dispatch per
//!    level, leaves first) gives every node its range of sorted points and its children.
//! 4. **Means and errors**: `sums` adds up every node's position and normal keys, `means` turns
//!    them into the node's mean keys, `errors` adds up every node's points' geometric variation
//!    against its mean. The two summing kernels give each invocation 32 consecutive sorted points,
//!    walk them level by level, and flush each node's register sum with a 64-bit atomic addition
//!    (two `u32` atomics and a carry).
//! 5. **Distribution**: the root gets `min(seeds, n)`; `distribute` (one dispatch per level, one
//!    invocation per node) splits a node's seeds between its children as the CPU's
//!    `split_seeds`: each child's minimum-density floor first, the rest by errors with the
//!    integer `apportion`.
//! 6. **Selection**: an exclusive scan of the leaves' seed counts places each leaf's seeds;
//!    `select`, one invocation per seed, finds its leaf and picks its point by jittered strata
//!    with the leaf's `SampleStream` at the seed's dimension.
//!
//! **Why the GPU and the CPU agree exactly.** Everything after keying a point is integer
//! arithmetic (64-bit sums as two words, a 32×32→64 product, a 64/32 division, a square root
//! corrected to its exact floor), so the order in which sums are formed does not matter, and the
//! one float operation per coordinate (a multiplication by `α·2^10`) is correctly rounded on
//! every GPU. `cpu::gather::seed_irradiance_samples` documents the arithmetic.
//!
//! **Host round trips**: one per quadtree level plus one (the node counts), and one more when
//! timestamps are on. The result's count is known without one: it is always `min(seeds, n)`.
//!
//! **Limits and memory**: at most `2^31` points (sums stay below `2^63`). Every buffer must fit
//! one storage binding, or the run is refused with [`GpuError::BufferTooLarge`] before the
//! node table is recorded: the sorted keys take 32 bytes per point, the node sums 48 bytes per
//! node (108 bytes per node in all), and a frame with one point per leaf has about `4n/3` nodes.
//! On lavapipe (128 MiB per binding) that caps a run at about 2M points with one point per leaf,
//! 4M otherwise. Kernels run with naga's checks; no invocation runs more than a few thousand
//! loop iterations (lavapipe's silent loop budget is 65535 per group of 8).

use std::time::Instant;

use bytemuck::{Pod, Zeroable};

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kernel::{
    read_buffer, stage_words, storage_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel,
};
use super::pool::GpuBuffer;
use super::prims::sorted_bounds::SortedRuns;
use super::prims::{Primitives, MAX_ELEMENTS};
use super::upload::GpuShadingPoint;
use crate::render::gather::seed_min_density_fixed;

/// Sorted points per invocation of the `sums` and `errors` kernels (`CHUNK` in
/// `shaders/seeding/common.wgsl`).
pub const SEED_CHUNK: u32 = 32;
/// Bytes of a `SeedPoint` (fixed-point keys of a point or a node's mean).
const SEED_POINT_BYTES: u64 = 32;
/// Bytes of a `ShadingPoint`.
const SHADING_POINT_BYTES: u64 = std::mem::size_of::<GpuShadingPoint>() as u64;

/// The factor from a coordinate to its position key: `α · 2^10` with α cleaned (NaN,
/// infinities and subnormals as 0) and the product clamped to `0..=2^37`. The same `f32` as
/// `cpu::gather::seed_position_scale` (this module does not reach into `cpu`; a test compares
/// the two).
pub fn position_scale(alpha: f32) -> f32 {
    let exponent = alpha.to_bits() & 0x7f80_0000;
    let alpha = if exponent == 0 || exponent == 0x7f80_0000 {
        0.0
    } else {
        alpha
    };
    (alpha * 1024.0).clamp(0.0, (1u64 << 37) as f32)
}

/// What the seeding is asked for (shared with the CPU twin).
pub use crate::render::gather::SeedingSettings;

/// The uniform every seeding kernel reads. Twin of `SeedParams` in
/// `shaders/seeding/common.wgsl`; a test checks naga's layout against this one.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SeedParams {
    pub n: u32,
    pub levels: u32,
    pub width: u32,
    pub height: u32,
    /// `α · 2^10`, clamped (`cpu::gather::seed_position_scale`).
    pub position_scale: f32,
    pub seed_lo: u32,
    pub seed_hi: u32,
    /// Items of this dispatch.
    pub count: u32,
    /// The first node of the level a per-level kernel works on.
    pub offset: u32,
    /// The next level's first node (link), or the first leaf (select).
    pub child_offset: u32,
    /// Leaves (select).
    pub leaves: u32,
    /// Link: 1 on the leaf level.
    pub mode: u32,
    /// The root's seeds, `min(seeds, n)` (distribute).
    pub total: u32,
    /// The minimum density β as `round(β·2^16)` (`render::gather::seed_min_density_fixed`).
    pub min_density: u32,
}

/// GPU milliseconds of the seeding's parts, from timestamps (each part may span several
/// submissions; the host's waits between them are not counted).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SeedingTimes {
    /// Codes, sort, sorted keys and the levels' runs.
    pub structure_ms: f64,
    /// Node table, sums, means and errors.
    pub nodes_ms: f64,
    /// Distribution, the scan of the leaves' seeds and the selection.
    pub select_ms: f64,
}

impl SeedingTimes {
    pub fn total_ms(&self) -> f64 {
        self.structure_ms + self.nodes_ms + self.select_ms
    }
}

/// What one seeding did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SeedingStats {
    /// GPU time per part, when timestamps are on and the adapter has them.
    pub gpu: Option<SeedingTimes>,
    /// Quadtree levels below the root.
    pub levels: u32,
    /// Nodes of the quadtree (root, internal nodes and leaves; only non-empty ones exist).
    pub nodes: u32,
    /// Leaves.
    pub leaves: u32,
    /// Times the host waited for the GPU to read something back.
    pub host_readbacks: u32,
    /// Host wall time from the first record to the last submit (and the waits in between).
    pub host_ms: f64,
}

/// Seeds on the GPU: `count` point indices at the front of `seeds`.
pub struct GpuSeeds {
    pub seeds: GpuBuffer,
    pub count: u32,
    pub stats: SeedingStats,
}

/// The seeding kernels, made once per context.
pub struct SeedingKernels {
    /// Whether runs record GPU timestamps (one more read-back per run).
    pub timestamps: bool,
    codes: Kernel,
    gather: Kernel,
    parent_keys: Kernel,
    link: Kernel,
    sums: Kernel,
    means: Kernel,
    errors: Kernel,
    distribute: Kernel,
    select: Kernel,
}

impl SeedingKernels {
    /// Builds the kernels (none uses subgroups; the primitives passed in may).
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        let kernel =
            |file: &str| Kernel::new(ctx, &format!("seeding/{file}.wgsl"), &[], Checks::Checked);
        Ok(SeedingKernels {
            timestamps: false,
            codes: kernel("codes")?,
            gather: kernel("gather")?,
            parent_keys: kernel("parent_keys")?,
            link: kernel("link")?,
            sums: kernel("sums")?,
            means: kernel("means")?,
            errors: kernel("errors")?,
            distribute: kernel("distribute")?,
            select: kernel("select")?,
        })
    }

    /// Turns per-part GPU timestamps on or off (they cost one more read-back per run and need
    /// the adapter's timestamp queries).
    pub fn with_timestamps(mut self, on: bool) -> Self {
        self.timestamps = on;
        self
    }

    /// The seeds among the first `n` shading points of `points` (`array<ShadingPoint>`): a
    /// buffer of point indices and their count (`min(seeds, n)`, at most one per point), in the
    /// CPU twin's order. Returns once the last kernels are submitted. `meanwhile` is called
    /// once the quadtree's levels are submitted and before their counts are read (the run's one
    /// wait), for the caller to submit work that does not need the seeds, which the device then
    /// does while the host waits and records the rest; it is not called when there is nothing
    /// to seed.
    pub fn seed_irradiance_samples(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        points: &GpuBuffer,
        n: u32,
        settings: &SeedingSettings,
        meanwhile: &mut dyn FnMut() -> Result<(), GpuError>,
    ) -> Result<(GpuBuffer, u32), GpuError> {
        let out = self.seed_with_stats(ctx, prims, points, n, settings, meanwhile)?;
        Ok((out.seeds, out.count))
    }

    /// Uploads `points`, seeds and reads the indices back (tests, small jobs).
    pub fn seed_irradiance_samples_vec(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        points: &[GpuShadingPoint],
        settings: &SeedingSettings,
    ) -> Result<Vec<u32>, GpuError> {
        let n = point_count(points.len())?;
        let buffer = storage_buffer(ctx, "shading points", points)?;
        let (seeds, count) =
            self.seed_irradiance_samples(ctx, prims, &buffer, n, settings, &mut || Ok(()))?;
        read_buffer(ctx, &seeds, count as usize)
    }

    /// [`seed_irradiance_samples`](Self::seed_irradiance_samples) with what the run did.
    pub fn seed_with_stats(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        points: &GpuBuffer,
        n: u32,
        settings: &SeedingSettings,
        meanwhile: &mut dyn FnMut() -> Result<(), GpuError>,
    ) -> Result<GpuSeeds, GpuError> {
        let clock = Instant::now();
        point_count(n as usize)?;
        let point_bytes = n as u64 * SHADING_POINT_BYTES;
        ctx.check_binding_size("shading points", points.size())?;
        if points.size() < point_bytes {
            return Err(GpuError::Device(format!(
                "seeding over {n} shading points, but the points buffer holds {} bytes",
                points.size()
            )));
        }
        let mut stats = SeedingStats::default();
        let total = settings.seeds.min(n);
        if total == 0 {
            stats.host_ms = clock.elapsed().as_secs_f64() * 1e3;
            return Ok(GpuSeeds {
                seeds: storage_buffer_sized(ctx, "seeds", 4)?,
                count: 0,
                stats,
            });
        }
        let levels = settings.levels.clamp(1, 16);
        stats.levels = levels;
        let base = SeedParams {
            n,
            levels,
            width: settings.width.max(1),
            height: settings.height.max(1),
            position_scale: position_scale(settings.alpha),
            seed_lo: settings.seed as u32,
            seed_hi: (settings.seed >> 32) as u32,
            total,
            min_density: seed_min_density_fixed(settings.min_density),
            ..Default::default()
        };
        let params = |p: SeedParams| uniform_buffer(ctx, "seeding params", &p);
        let words = |label: &str, count: u64| storage_buffer_sized(ctx, label, count * 4);
        let mut stamps = Stamps::new(ctx, self.timestamps, levels)?;

        // 1. Codes, sort, sorted keys, leaves.
        let codes = words("seeding codes", n as u64)?;
        let order = words("seeding order", n as u64)?;
        let sorted_points = storage_buffer_sized(ctx, "seeding keys", n as u64 * SEED_POINT_BYTES)?;
        let mut encoder = new_encoder(ctx);
        stamps.begin(&mut encoder, Part::Structure);
        let p = params(base);
        let bind = self.codes.bind(
            ctx,
            &[
                ("params", &p),
                ("points", points),
                ("codes", &codes),
                ("order", &order),
            ],
        )?;
        self.codes
            .dispatch(&mut encoder, &bind, self.codes.grid_for(ctx, n as u64));
        prims.radix_sort_u32(ctx, &mut encoder, &codes, &order, n, 2 * levels)?;
        let bind = self.gather.bind(
            ctx,
            &[
                ("params", &p),
                ("points", points),
                ("order", &order),
                ("sorted_points", &sorted_points),
            ],
        )?;
        self.gather
            .dispatch(&mut encoder, &bind, self.gather.grid_for(ctx, n as u64));
        let leaves = prims.find_sorted_bounds(ctx, &mut encoder, &codes, None, n)?;

        // 2. The levels above, bottom-up: runs of equal child keys >> 2, in the same
        // submission, every count read back together. Each level's count stays on the device
        // for the next; a level's kernels cover its room: a level-l key has 2·l bits, so it has
        // at most min(n, 4^l) nodes (checked when the counts come back).
        let room = |level: u32| (n as u64).min(1u64 << (2 * level).min(63)) as u32;
        let mut runs: Vec<Option<SortedRuns>> = (0..=levels).map(|_| None).collect();
        runs[levels as usize] = Some(leaves);
        for level in (0..levels as usize).rev() {
            let child_capacity = room(level as u32 + 1);
            let child_runs = runs[level + 1]
                .as_ref()
                .expect("the level below was made in the previous iteration");
            let keys = words("seeding parent keys", child_capacity as u64)?;
            let p = params(SeedParams {
                count: child_capacity,
                ..base
            });
            let at = std::mem::offset_of!(SeedParams, count) as u64;
            encoder.copy_buffer_to_buffer(&child_runs.count.buffer, 0, &p, at, 4);
            let bind = self.parent_keys.bind(
                ctx,
                &[
                    ("params", &p),
                    ("child_keys", &child_runs.keys_lo),
                    ("parent_keys", &keys),
                ],
            )?;
            self.parent_keys.dispatch(
                &mut encoder,
                &bind,
                self.parent_keys.grid_for(ctx, child_capacity as u64),
            );
            let level_runs = prims.find_sorted_bounds_live(
                ctx,
                &mut encoder,
                &keys,
                child_capacity,
                &child_runs.count.buffer,
            )?;
            runs[level] = Some(level_runs);
        }
        let all: Vec<(&GpuBuffer, u64)> = runs
            .iter()
            .map(|r| {
                let runs = r.as_ref().expect("every level's runs were made above");
                (&runs.count.buffer, 0)
            })
            .collect();
        let staged = stage_words(ctx, &mut encoder, &all);
        stamps.end(&mut encoder);
        let index = ctx.submit([encoder.finish()]);
        // The caller's independent work goes to the device before the counts are waited for.
        meanwhile()?;
        let counts = staged.read(ctx, index)?;
        stats.host_readbacks += 1;
        if (0..=levels).any(|l| counts[l as usize] > room(l)) {
            return Err(GpuError::Device(format!(
                "seeding: the quadtree's levels have {counts:?} nodes, more than a level holds"
            )));
        }
        let leaf_count = counts[levels as usize];
        if counts[0] != 1 || counts.contains(&0) {
            return Err(GpuError::Device(format!(
                "seeding: the quadtree's levels have {counts:?} nodes (one root expected)"
            )));
        }
        let mut offsets = vec![0u32; levels as usize + 2];
        for level in 0..=levels as usize {
            offsets[level + 1] = offsets[level]
                .checked_add(counts[level])
                .filter(|&t| t <= MAX_ELEMENTS)
                .ok_or_else(|| GpuError::Device("seeding: too many quadtree nodes".into()))?;
        }
        let nodes = offsets[levels as usize + 1];
        let leaf_offset = offsets[levels as usize];
        stats.nodes = nodes;
        stats.leaves = leaf_count;

        // 3.–6. Node table, sums, means, errors, distribution, selection: one submission.
        let table: Vec<[u32; 2]> = (0..=levels as usize)
            .map(|l| [offsets[l], counts[l]])
            .collect();
        let level_table = storage_buffer(ctx, "seeding level table", &table)?;
        let node_range = words("seeding node ranges", 2 * nodes as u64)?;
        let node_children = words("seeding node children", 2 * nodes as u64)?;
        let node_sums = words("seeding node sums", 12 * nodes as u64)?;
        let node_means =
            storage_buffer_sized(ctx, "seeding node means", nodes as u64 * SEED_POINT_BYTES)?;
        let node_errors = words("seeding node errors", 2 * nodes as u64)?;
        let node_seeds = words("seeding node seeds", nodes as u64)?;
        let leaf_seeds = words("seeding leaf seeds", leaf_count as u64)?;
        let leaf_offsets = words("seeding leaf offsets", leaf_count as u64)?;
        let seeds = words("seeds", total as u64)?;
        ctx.write_buffer(&node_seeds, 0, bytemuck::bytes_of(&total));

        let mut encoder = new_encoder(ctx);
        stamps.begin(&mut encoder, Part::Nodes);
        for level in (0..=levels as usize).rev() {
            let level_runs = runs[level]
                .as_ref()
                .expect("every level's runs were made above");
            let p = params(SeedParams {
                count: counts[level],
                offset: offsets[level],
                child_offset: offsets[level + 1],
                mode: u32::from(level == levels as usize),
                ..base
            });
            let bind = self.link.bind(
                ctx,
                &[
                    ("params", &p),
                    ("run_starts", &level_runs.starts),
                    ("run_ends", &level_runs.ends),
                    ("node_range", &node_range),
                    ("node_children", &node_children),
                ],
            )?;
            self.link.dispatch(
                &mut encoder,
                &bind,
                self.link.grid_for(ctx, counts[level] as u64),
            );
        }
        encoder.clear_buffer(&node_sums, 0, None);
        encoder.clear_buffer(&node_errors, 0, None);
        let chunks = (n as u64).div_ceil(SEED_CHUNK as u64);
        let p = params(base);
        let bind = self.sums.bind(
            ctx,
            &[
                ("params", &p),
                ("level_table", &level_table),
                ("node_range", &node_range),
                ("sorted_points", &sorted_points),
                ("node_sums", &node_sums),
            ],
        )?;
        self.sums
            .dispatch(&mut encoder, &bind, self.sums.grid_for(ctx, chunks));
        let below_root = params(SeedParams {
            count: nodes - 1,
            offset: 1,
            ..base
        });
        let bind = self.means.bind(
            ctx,
            &[
                ("params", &below_root),
                ("node_range", &node_range),
                ("node_sums", &node_sums),
                ("node_means", &node_means),
            ],
        )?;
        self.means.dispatch(
            &mut encoder,
            &bind,
            self.means.grid_for(ctx, (nodes - 1) as u64),
        );
        let bind = self.errors.bind(
            ctx,
            &[
                ("params", &p),
                ("level_table", &level_table),
                ("node_range", &node_range),
                ("sorted_points", &sorted_points),
                ("node_means", &node_means),
                ("node_errors", &node_errors),
            ],
        )?;
        self.errors
            .dispatch(&mut encoder, &bind, self.errors.grid_for(ctx, chunks));
        stamps.end(&mut encoder);
        stamps.begin(&mut encoder, Part::Select);
        for level in 0..levels as usize {
            let p = params(SeedParams {
                count: counts[level],
                offset: offsets[level],
                ..base
            });
            let bind = self.distribute.bind(
                ctx,
                &[
                    ("params", &p),
                    ("node_range", &node_range),
                    ("node_children", &node_children),
                    ("node_errors", &node_errors),
                    ("node_seeds", &node_seeds),
                ],
            )?;
            self.distribute.dispatch(
                &mut encoder,
                &bind,
                self.distribute.grid_for(ctx, counts[level] as u64),
            );
        }
        encoder.copy_buffer_to_buffer(
            &node_seeds,
            leaf_offset as u64 * 4,
            &leaf_seeds,
            0,
            leaf_count as u64 * 4,
        );
        prims.exclusive_scan(ctx, &mut encoder, &leaf_seeds, &leaf_offsets, leaf_count)?;
        let p = params(SeedParams {
            count: total,
            child_offset: leaf_offset,
            leaves: leaf_count,
            ..base
        });
        let bind = self.select.bind(
            ctx,
            &[
                ("params", &p),
                ("node_range", &node_range),
                ("order", &order),
                ("leaf_seeds", &leaf_seeds),
                ("leaf_offsets", &leaf_offsets),
                ("seeds", &seeds),
            ],
        )?;
        self.select
            .dispatch(&mut encoder, &bind, self.select.grid_for(ctx, total as u64));
        stamps.end(&mut encoder);
        ctx.submit([encoder.finish()]);
        if let Some(times) = stamps.read(ctx)? {
            stats.host_readbacks += 1;
            stats.gpu = Some(times);
        }
        stats.host_ms = clock.elapsed().as_secs_f64() * 1e3;
        Ok(GpuSeeds {
            seeds,
            count: total,
            stats,
        })
    }
}

/// A shading point count as `u32`, refused above the primitives' limit.
fn point_count(len: usize) -> Result<u32, GpuError> {
    u32::try_from(len)
        .ok()
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| {
            GpuError::Device(format!(
                "seeding takes at most {MAX_ELEMENTS} shading points, but {len} were given"
            ))
        })
}

fn new_encoder(ctx: &GpuContext) -> Encoder {
    Encoder::new(ctx)
}

/// The parts that timestamps tell apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Structure,
    Nodes,
    Select,
}

/// Timestamp pairs around each stretch of GPU work, summed per part.
struct Stamps {
    query: Option<(wgpu::QuerySet, GpuBuffer)>,
    capacity: u32,
    /// (part, index of the first stamp of the pair).
    pairs: Vec<(Part, u32)>,
}

impl Stamps {
    fn new(ctx: &GpuContext, wanted: bool, levels: u32) -> Result<Stamps, GpuError> {
        // One pair per level's submission, one for the leaves, two for the last submission.
        let capacity = 2 * (levels + 3);
        if !wanted || !ctx.info.features.timestamps {
            return Ok(Stamps {
                query: None,
                capacity,
                pairs: Vec::new(),
            });
        }
        Ok(Stamps {
            query: Some(super::kernel::timestamp_queries(
                ctx,
                "seeding timestamps",
                capacity,
            )),
            capacity,
            pairs: Vec::new(),
        })
    }

    fn write(&self, encoder: &mut Encoder, index: u32) {
        if let Some((set, _)) = &self.query {
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("seeding timestamp"),
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: set,
                    beginning_of_pass_write_index: Some(index),
                    end_of_pass_write_index: None,
                }),
            });
        }
    }

    fn begin(&mut self, encoder: &mut Encoder, part: Part) {
        if self.query.is_none() {
            return;
        }
        let index = 2 * self.pairs.len() as u32;
        if index + 1 < self.capacity {
            self.pairs.push((part, index));
            self.write(encoder, index);
        }
    }

    fn end(&mut self, encoder: &mut Encoder) {
        if let Some(&(_, index)) = self.pairs.last() {
            self.write(encoder, index + 1);
        }
    }

    /// Resolves and reads the part times (waits for the GPU).
    fn read(&self, ctx: &GpuContext) -> Result<Option<SeedingTimes>, GpuError> {
        let Some((set, resolve)) = &self.query else {
            return Ok(None);
        };
        let used = 2 * self.pairs.len() as u32;
        if used == 0 {
            return Ok(None);
        }
        let copy = storage_buffer_sized(ctx, "seeding timestamps (copy)", used as u64 * 8)?;
        let mut encoder = new_encoder(ctx);
        encoder.resolve_query_set(set, 0..used, resolve, 0);
        encoder.copy_buffer_to_buffer(resolve, 0, &copy, 0, used as u64 * 8);
        ctx.submit([encoder.finish()]);
        let ticks: Vec<u64> = read_buffer(ctx, &copy, used as usize)?;
        let mut times = SeedingTimes::default();
        for &(part, i) in &self.pairs {
            let ms = ticks[i as usize + 1].saturating_sub(ticks[i as usize]) as f64
                * ctx.info.timestamp_period_ns as f64
                * 1e-6;
            match part {
                Part::Structure => times.structure_ms += ms,
                Part::Nodes => times.nodes_ms += ms,
                Part::Select => times.select_ms += ms,
            }
        }
        Ok(Some(times))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader;

    /// The host `SeedParams` has the size and field offsets naga reflects for its WGSL twin.
    #[test]
    fn seed_params_matches_its_wgsl_twin() {
        let source = shader::assemble("seeding/common.wgsl", &[]).unwrap();
        let module = shader::validate("seeding/common.wgsl", &source).unwrap();
        let (_, ty) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("SeedParams"))
            .expect("common.wgsl declares SeedParams");
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            panic!("SeedParams is a struct");
        };
        assert_eq!(*span as usize, std::mem::size_of::<SeedParams>());
        let offsets: Vec<(String, u32)> = members
            .iter()
            .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
            .collect();
        let host = [
            ("n", std::mem::offset_of!(SeedParams, n)),
            ("levels", std::mem::offset_of!(SeedParams, levels)),
            ("width", std::mem::offset_of!(SeedParams, width)),
            ("height", std::mem::offset_of!(SeedParams, height)),
            (
                "position_scale",
                std::mem::offset_of!(SeedParams, position_scale),
            ),
            ("seed_lo", std::mem::offset_of!(SeedParams, seed_lo)),
            ("seed_hi", std::mem::offset_of!(SeedParams, seed_hi)),
            ("count", std::mem::offset_of!(SeedParams, count)),
            ("offset", std::mem::offset_of!(SeedParams, offset)),
            (
                "child_offset",
                std::mem::offset_of!(SeedParams, child_offset),
            ),
            ("leaves", std::mem::offset_of!(SeedParams, leaves)),
            ("mode", std::mem::offset_of!(SeedParams, mode)),
            ("total", std::mem::offset_of!(SeedParams, total)),
            ("min_density", std::mem::offset_of!(SeedParams, min_density)),
        ]
        .map(|(name, offset)| (name.to_string(), offset as u32));
        assert_eq!(offsets, host.to_vec());
    }
}
