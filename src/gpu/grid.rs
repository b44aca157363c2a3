//! The two-level grid of paper 001 built on the GPU (Kalojanov, Billeter and Slusallek,
//! Algorithm 1): the same words as the CPU twin [`build_grid`], word for word, or its
//! [`GridTooLarge`] error.
//!
//! The host works out only [`GridParams::new`] (the box union, the top resolution, the margin
//! and the leaf thresholds) and uploads it; the device follows `build_grid`'s steps:
//!
//! 1. `grid/grid_boxes.wgsl`: each box's grid box (stored as bits) and the number of top cells
//!    it overlaps, then an exclusive scan; the total is read back and checked against
//!    [`refs_limit`] before the pairs are allocated;
//! 2. `grid/top_pairs.wgsl`: the (top cell, primitive) pairs at the scanned places (so in
//!    primitive order), counted per top cell with atomics, then the stable radix sort by cell;
//! 3. `grid/top_cells.wgsl`: each top cell's leaf resolution (a binary search in the
//!    thresholds, no roots on the device) and leaf count, whose exclusive scan is each cell's
//!    first leaf;
//! 4. `grid/leaf_counts.wgsl`: per sorted top pair, the leaves its box overlaps, then an
//!    exclusive scan; the leaf total and this total are read back (one read) and checked, in
//!    `build_grid`'s order; `grid/leaf_pairs.wgsl` writes the (leaf, primitive) pairs, and a
//!    stable radix sort orders them by leaf;
//! 5. `grid/top_words.wgsl` and `grid/leaf_ranges.wgsl`: the top cells' words, the leaves'
//!    ranges (the host clears the leaves first, so empty leaves are 0, 0) and the references;
//!    the host writes the sixteen header words.
//!
//! The totals are exact (64 bits, `grid/total.wgsl`), so an error reports the same count as the
//! CPU's, and nothing larger than [`refs_limit`] elements is ever allocated. Placing a box is a
//! subtraction, a multiplication and a floor in `build_grid`'s order, and the grid boxes go
//! through memory between kernels, so no multiply can be fused with a later subtraction.
//!
//! Memory while a build runs, beside the words and the radix sorts' ping-pong buffers: 72 bytes
//! a box (its input included), 16 a top cell, 16 a top pair and 8 a reference.

use bytemuck::{Pod, Zeroable};

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kernel::{
    read_buffer, read_words, storage_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel,
};
use super::lbvh::sized_buffer;
use super::pool::GpuBuffer;
use super::prims::{Primitives, MAX_ELEMENTS};
use crate::accel::aabb::Aabb;
#[cfg(doc)]
use crate::accel::grid::grid_size;
use crate::accel::grid::{refs_limit, GridParams, GridTooLarge, HEADER_WORDS};

#[cfg(doc)]
use crate::accel::grid::build_grid;

/// The uniform of every grid kernel. Twin of `GridBuildParams` in `shaders/grid/common.wgsl`;
/// a test checks naga's layout against this one.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GridBuildParams {
    /// xyz: the grid box's lower corner; w: the margin.
    pub min: [f32; 4],
    /// xyz: top cells per unit length.
    pub inv_size: [f32; 4],
    /// xyz: the top resolution; w: top cells.
    pub res: [u32; 4],
    /// Boxes given, placeable or not.
    pub boxes: u32,
    /// (top cell, primitive) pairs.
    pub top_pairs: u32,
    /// References.
    pub refs: u32,
    /// Where the leaves and the references start in the words.
    pub leaves_at: u32,
    pub refs_at: u32,
    pub _pad: [u32; 3],
}

/// What a GPU build gives back.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuGridBuild {
    /// The words of [`build_grid`].
    pub words: Vec<u32>,
    /// The device time of the build in ms when the adapter has timestamps (None otherwise).
    pub device_ms: Option<f64>,
    /// (leaf, primitive) pairs: the references.
    pub refs: usize,
}

/// The grid kernels, built once per context.
pub struct GridBuilder {
    grid_boxes: Kernel,
    top_pairs: Kernel,
    top_cells: Kernel,
    leaf_counts: Kernel,
    leaf_pairs: Kernel,
    top_words: Kernel,
    leaf_ranges: Kernel,
}

/// Bits a radix sort needs for keys `0..count`.
fn key_bits(count: u64) -> u32 {
    64 - count.saturating_sub(1).leading_zeros()
}

/// The `(lo, hi)` pair of words of an exact total as one number.
fn total(words: &[u32]) -> u64 {
    u64::from(words[0]) | u64::from(words[1]) << 32
}

impl GridBuilder {
    /// Builds the kernels.
    pub fn new(ctx: &GpuContext) -> Result<GridBuilder, GpuError> {
        let kernel = |file: &str| Kernel::new(ctx, &format!("grid/{file}"), &[], Checks::Checked);
        Ok(GridBuilder {
            grid_boxes: kernel("grid_boxes.wgsl")?,
            top_pairs: kernel("top_pairs.wgsl")?,
            top_cells: kernel("top_cells.wgsl")?,
            leaf_counts: kernel("leaf_counts.wgsl")?,
            leaf_pairs: kernel("leaf_pairs.wgsl")?,
            top_words: kernel("top_words.wgsl")?,
            leaf_ranges: kernel("leaf_ranges.wgsl")?,
        })
    }

    /// Records `kernel` over `n` items with `resources`.
    fn run(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        kernel: &Kernel,
        n: u64,
        resources: &[(&str, &GpuBuffer)],
    ) -> Result<(), GpuError> {
        let bind = kernel.bind(ctx, resources)?;
        kernel.dispatch(encoder, &bind, kernel.grid_for(ctx, n));
        Ok(())
    }

    /// Builds the grid over `boxes` on the device and reads its words back (tests, benches):
    /// the words of [`build_grid`], or its [`GridTooLarge`] error. Reads two totals back on
    /// the way (the references a step needs, checked before they are allocated). The device
    /// time is the context's device clock over the build's submissions (the clocks are started
    /// afresh: a reading in progress is lost).
    pub fn build_vec(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        boxes: &[Aabb],
    ) -> Result<Result<GpuGridBuild, GridTooLarge>, GpuError> {
        ctx.reset_clocks();
        let (words, word_count, refs) = match self.build_words(ctx, prims, boxes)? {
            Ok(built) => built,
            Err(e) => return Ok(Err(e)),
        };
        let words: Vec<u32> = read_buffer(ctx, &words, word_count as usize)?;
        let device_ms = ctx.read_device_clock()?.map(|c| c.device_ms);
        Ok(Ok(GpuGridBuild {
            words,
            device_ms,
            refs: refs as usize,
        }))
    }

    /// Builds the grid over `boxes` into `target` (the resident scene's `grid_cells`) from word
    /// `offset`, where the host reserved `room` words for it ([`grid_size`] counted them; a
    /// build of another size is an error). Returns the references.
    pub fn build_into(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        boxes: &[Aabb],
        target: &GpuBuffer,
        offset: u32,
        room: u32,
    ) -> Result<u32, GpuError> {
        let (words, word_count, refs) = match self.build_words(ctx, prims, boxes)? {
            Ok(built) => built,
            Err(e) => {
                return Err(GpuError::Device(format!(
                    "grid: {} references needed, more than the {} it may hold",
                    e.refs, e.limit
                )))
            }
        };
        if word_count != u64::from(room) {
            return Err(GpuError::Device(format!(
                "grid: the device built {word_count} words where {room} were reserved"
            )));
        }
        let mut encoder = Encoder::new(ctx);
        encoder.copy_buffer_to_buffer(&words, 0, target, u64::from(offset) * 4, word_count * 4);
        ctx.submit([encoder.finish()]);
        Ok(refs)
    }

    /// The grid over `boxes` in a buffer of its own: (words, their count, references).
    #[allow(clippy::type_complexity)]
    fn build_words(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        boxes: &[Aabb],
    ) -> Result<Result<(GpuBuffer, u64, u32), GridTooLarge>, GpuError> {
        let n = u32::try_from(boxes.len())
            .ok()
            .filter(|&n| n <= MAX_ELEMENTS)
            .ok_or_else(|| {
                GpuError::Device(format!(
                    "grid: {} boxes, but a build takes at most {MAX_ELEMENTS}",
                    boxes.len()
                ))
            })?;
        let grid = GridParams::new(boxes);
        let limit = refs_limit(grid.prims);
        let top_count = grid.top_cells() as u32;
        let mut params = GridBuildParams {
            min: grid.min.extend(grid.margin).to_array(),
            inv_size: grid.inv_size.extend(0.0).to_array(),
            res: [grid.res[0], grid.res[1], grid.res[2], top_count],
            boxes: n,
            ..Default::default()
        };
        // At least one box, so that the buffer binds when there are none.
        let mut box_words: Vec<[[f32; 4]; 2]> = super::lbvh::box_words(boxes);
        if box_words.is_empty() {
            box_words.push([[0.0; 4]; 2]);
        }
        let box_buffer = storage_buffer(ctx, "grid input boxes", &box_words)?;
        let thresholds: Vec<u32> = grid.thresholds.iter().flatten().copied().collect();
        let thresholds = storage_buffer(ctx, "grid thresholds", &thresholds)?;
        let boxes_n = u64::from(n.max(1));

        // Step 1: grid boxes, top ranges, their scan and total.
        let uniform = uniform_buffer(ctx, "grid params", &params);
        let grid_boxes = sized_buffer(ctx, "grid boxes", boxes_n * 32)?;
        let top_counts = sized_buffer(ctx, "grid top counts", boxes_n * 4)?;
        let top_offsets = sized_buffer(ctx, "grid top offsets", boxes_n * 4)?;
        let top_total = storage_buffer_sized(ctx, "grid top pairs total", 8)?;
        let mut encoder = Encoder::new(ctx);
        self.run(
            ctx,
            &mut encoder,
            &self.grid_boxes,
            u64::from(n),
            &[
                ("params", &uniform),
                ("boxes", &box_buffer),
                ("grid_boxes", &grid_boxes),
                ("counts", &top_counts),
                ("totals", &top_total),
            ],
        )?;
        prims.exclusive_scan(ctx, &mut encoder, &top_counts, &top_offsets, n)?;
        ctx.submit([encoder.finish()]);
        let top_pairs = total(&read_words(ctx, &[(&top_total, 0), (&top_total, 1)])?);
        if top_pairs > limit {
            return Ok(Err(GridTooLarge {
                refs: top_pairs,
                limit,
            }));
        }
        let top_pairs = top_pairs as u32;
        params.top_pairs = top_pairs;
        let pairs_n = u64::from(top_pairs.max(1));

        // Step 2: the top pairs in primitive order, counted per cell, sorted by cell.
        let uniform = uniform_buffer(ctx, "grid params", &params);
        let pair_cells = sized_buffer(ctx, "grid top pair cells", pairs_n * 4)?;
        let pair_prims = sized_buffer(ctx, "grid top pair primitives", pairs_n * 4)?;
        let cell_counts = storage_buffer_sized(ctx, "grid cell counts", u64::from(top_count) * 4)?;
        let mut encoder = Encoder::new(ctx);
        self.run(
            ctx,
            &mut encoder,
            &self.top_pairs,
            u64::from(n),
            &[
                ("params", &uniform),
                ("grid_boxes", &grid_boxes),
                ("offsets", &top_offsets),
                ("cells", &pair_cells),
                ("prims", &pair_prims),
                ("cell_counts", &cell_counts),
            ],
        )?;
        let bits = key_bits(u64::from(top_count));
        prims.radix_sort_u32(ctx, &mut encoder, &pair_cells, &pair_prims, top_pairs, bits)?;

        // Step 3: leaf resolutions, leaf counts and first leaves.
        let cells_n = u64::from(top_count);
        let packed = sized_buffer(ctx, "grid packed resolutions", cells_n * 4)?;
        let leaf_counts = sized_buffer(ctx, "grid leaf counts", cells_n * 4)?;
        let first_leaf = sized_buffer(ctx, "grid first leaves", cells_n * 4)?;
        let leaves_total = storage_buffer_sized(ctx, "grid leaves total", 8)?;
        self.run(
            ctx,
            &mut encoder,
            &self.top_cells,
            cells_n,
            &[
                ("params", &uniform),
                ("thresholds", &thresholds),
                ("cell_counts", &cell_counts),
                ("packed", &packed),
                ("leaf_counts", &leaf_counts),
                ("totals", &leaves_total),
            ],
        )?;
        prims.exclusive_scan(ctx, &mut encoder, &leaf_counts, &first_leaf, top_count)?;

        // Step 4, counting: the leaves of every sorted top pair, their scan and total.
        let ref_counts = sized_buffer(ctx, "grid reference counts", pairs_n * 4)?;
        let ref_offsets = sized_buffer(ctx, "grid reference offsets", pairs_n * 4)?;
        let refs_total = storage_buffer_sized(ctx, "grid references total", 8)?;
        self.run(
            ctx,
            &mut encoder,
            &self.leaf_counts,
            u64::from(top_pairs),
            &[
                ("params", &uniform),
                ("grid_boxes", &grid_boxes),
                ("cells", &pair_cells),
                ("prims", &pair_prims),
                ("packed", &packed),
                ("counts", &ref_counts),
                ("totals", &refs_total),
            ],
        )?;
        prims.exclusive_scan(ctx, &mut encoder, &ref_counts, &ref_offsets, top_pairs)?;
        ctx.submit([encoder.finish()]);
        let totals = read_words(
            ctx,
            &[
                (&leaves_total, 0),
                (&leaves_total, 1),
                (&refs_total, 0),
                (&refs_total, 1),
            ],
        )?;
        let (leaves, refs) = (total(&totals[..2]), total(&totals[2..]));
        // In build_grid's order: the leaves first, then the references.
        for needed in [leaves, refs] {
            if needed > limit {
                return Ok(Err(GridTooLarge {
                    refs: needed,
                    limit,
                }));
            }
        }
        let (leaves, refs) = (leaves as u32, refs as u32);
        let leaves_at = HEADER_WORDS as u64 + 2 * cells_n;
        let refs_at = leaves_at + 2 * u64::from(leaves);
        let word_count = refs_at + u64::from(refs);
        let (Ok(leaves_at), Ok(refs_at)) = (u32::try_from(leaves_at), u32::try_from(refs_at))
        else {
            return Err(GpuError::Device(format!(
                "grid: {word_count} words do not fit 32-bit indices"
            )));
        };
        params.refs = refs;
        params.leaves_at = leaves_at;
        params.refs_at = refs_at;

        // Step 4, writing: the references keyed by leaf, sorted by it; step 5: the words.
        let uniform = uniform_buffer(ctx, "grid params", &params);
        let refs_n = u64::from(refs.max(1));
        let leaf_keys = sized_buffer(ctx, "grid reference leaves", refs_n * 4)?;
        let leaf_prims = sized_buffer(ctx, "grid reference primitives", refs_n * 4)?;
        let words = sized_buffer(ctx, "grid words", word_count * 4)?;
        let header = grid.header(top_count, leaves, refs);
        ctx.write_buffer(&words, 0, bytemuck::cast_slice(&header));
        let mut encoder = Encoder::new(ctx);
        if leaves > 0 {
            let at = u64::from(leaves_at) * 4;
            encoder.clear_buffer(&words, at, Some(u64::from(leaves) * 8));
        }
        self.run(
            ctx,
            &mut encoder,
            &self.top_words,
            cells_n,
            &[
                ("params", &uniform),
                ("first_leaf", &first_leaf),
                ("packed", &packed),
                ("words", &words),
            ],
        )?;
        self.run(
            ctx,
            &mut encoder,
            &self.leaf_pairs,
            u64::from(top_pairs),
            &[
                ("params", &uniform),
                ("grid_boxes", &grid_boxes),
                ("cells", &pair_cells),
                ("prims", &pair_prims),
                ("packed", &packed),
                ("first_leaf", &first_leaf),
                ("offsets", &ref_offsets),
                ("leaf_keys", &leaf_keys),
                ("leaf_prims", &leaf_prims),
            ],
        )?;
        let bits = key_bits(u64::from(leaves));
        prims.radix_sort_u32(ctx, &mut encoder, &leaf_keys, &leaf_prims, refs, bits)?;
        self.run(
            ctx,
            &mut encoder,
            &self.leaf_ranges,
            u64::from(refs),
            &[
                ("params", &uniform),
                ("leaf_keys", &leaf_keys),
                ("leaf_prims", &leaf_prims),
                ("words", &words),
            ],
        )?;
        ctx.submit([encoder.finish()]);
        Ok(Ok((words, word_count, refs)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader;

    /// The host `GridBuildParams` has the size and field offsets naga reflects for its WGSL
    /// twin.
    #[test]
    fn grid_build_params_match_their_wgsl_twin() {
        let (span, offsets) = shader::struct_layout("grid/top_words.wgsl", "GridBuildParams");
        assert_eq!(span as usize, std::mem::size_of::<GridBuildParams>());
        let names: Vec<(String, u32)> = offsets
            .into_iter()
            .filter(|(n, _)| !n.starts_with("_pad"))
            .collect();
        let field = |name: &str, offset: usize| (name.to_string(), offset as u32);
        assert_eq!(
            names,
            vec![
                field("min", std::mem::offset_of!(GridBuildParams, min)),
                field("inv_size", std::mem::offset_of!(GridBuildParams, inv_size)),
                field("res", std::mem::offset_of!(GridBuildParams, res)),
                field("boxes", std::mem::offset_of!(GridBuildParams, boxes)),
                field(
                    "top_pairs",
                    std::mem::offset_of!(GridBuildParams, top_pairs)
                ),
                field("refs", std::mem::offset_of!(GridBuildParams, refs)),
                field(
                    "leaves_at",
                    std::mem::offset_of!(GridBuildParams, leaves_at)
                ),
                field("refs_at", std::mem::offset_of!(GridBuildParams, refs_at)),
            ]
        );
    }

    /// The kernels' constants are the CPU twin's.
    #[test]
    fn grid_kernel_constants_equal_the_cpu_twins() {
        use crate::accel::grid::THRESHOLDS_PER_AXIS;
        let source = shader::assemble("grid/top_cells.wgsl", &[]).expect("assembles");
        for constant in [
            format!("const HEADER_WORDS: u32 = {HEADER_WORDS}u;"),
            format!("const THRESHOLDS_PER_AXIS: u32 = {THRESHOLDS_PER_AXIS}u;"),
        ] {
            assert!(source.contains(&constant), "{constant}");
        }
    }

    #[test]
    fn key_bits_cover_every_key() {
        assert_eq!(key_bits(0), 0);
        assert_eq!(key_bits(1), 0);
        assert_eq!(key_bits(2), 1);
        assert_eq!(key_bits(256), 8);
        assert_eq!(key_bits(257), 9);
    }
}
