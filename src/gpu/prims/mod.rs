//! Data-parallel primitives on the GPU (scan, stream compaction, segmented scan and reduce,
//! key-value radix sort, sorted-run bounds, the Morton order of points), each with a plain CPU twin in `crate::cpu::prims`.
//!
//! [`Primitives`] holds every kernel, built once per context with the subgroup variants when the
//! adapter has subgroups. Its methods *record* work into a caller's `Encoder` on
//! caller-owned buffers, allocating the scratch they need; the `*_vec` methods upload a slice,
//! run, and read back, for tests and small jobs.
//!
//! Counts that a later step needs (kept elements, segments, runs) stay on the GPU in a
//! [`CountBuffer`]: `[count, workgroups_x, 1, 1]`, usable directly as the arguments of an
//! indirect dispatch of a 256-wide kernel over the items. Kernels that produce a variable number
//! of items are dispatched for the upper bound `n` and read the count in the shader. No method
//! reads anything back to the host except the `*_vec` conveniences.
//!
//! Element counts are `u32`; buffers above the adapter's storage-binding limit are refused with
//! [`GpuError::BufferTooLarge`] before anything is recorded.

pub mod compact;
pub mod morton;
pub mod radix_sort;
pub mod scan;
pub mod segmented;
pub mod sorted_bounds;

use std::sync::Mutex;

use bytemuck::{Pod, Zeroable};

use super::context::{GpuContext, GpuError};
use super::kernel::{
    read_buffer, read_words, storage_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel,
};
use crate::gpu::encoder::Encoder;
use crate::gpu::pool::GpuBuffer;

pub use sorted_bounds::SortedRun;

/// Invocations per workgroup in every primitive kernel (`WG_SIZE` in `prims/common.wgsl`).
pub const WORKGROUP_SIZE: u32 = 256;
/// Elements per workgroup in the block kernels (`BLOCK_SIZE` in `prims/common.wgsl`).
pub const BLOCK_SIZE: u32 = 1024;
/// The largest element count the primitives accept (indices stay far from `u32` overflow).
pub const MAX_ELEMENTS: u32 = 1 << 31;

/// Scan mode bits (`MODE_*` in `prims/common.wgsl`).
pub(crate) const MODE_INCLUSIVE: u32 = 1;
pub(crate) const MODE_NONZERO_AS_ONE: u32 = 2;
pub(crate) const MODE_FIRST_AS_ONE: u32 = 4;

/// The one uniform every primitive kernel reads. Twin of `PrimParams` in
/// `shaders/prims/common.wgsl`; a test checks naga's layout against this one.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct PrimParams {
    /// Number of input elements.
    pub n: u32,
    /// Scan mode bits, or a flag for the other kernels (e.g. "has high key words").
    pub mode: u32,
    /// Radix sort: the bit where this pass's digit starts.
    pub shift: u32,
    /// Number of blocks (workgroups) in a block kernel's grid.
    pub num_blocks: u32,
}

/// A GPU-resident count with indirect-dispatch arguments: `[count, ceil(count / 256), 1, 1]`.
pub struct CountBuffer {
    pub buffer: GpuBuffer,
}

impl CountBuffer {
    /// A zeroed count buffer (usable as storage and as indirect-dispatch arguments).
    pub fn new(ctx: &GpuContext, label: &str) -> CountBuffer {
        let usage = wgpu::BufferUsages::INDIRECT.union(crate::gpu::kernel::STORAGE_USAGE);
        let buffer = crate::gpu::kernel::pooled_buffer(ctx, label, 16, usage, true);
        CountBuffer { buffer }
    }

    /// Reads the count back (waits for the GPU).
    pub fn read(&self, ctx: &GpuContext) -> Result<u32, GpuError> {
        Ok(self.read_indirect_args(ctx)?[0])
    }

    /// Reads the counts of several buffers with one read-back (one wait for the GPU).
    pub fn read_all(ctx: &GpuContext, counts: &[&CountBuffer]) -> Result<Vec<u32>, GpuError> {
        let words: Vec<(&GpuBuffer, u64)> = counts.iter().map(|c| (&c.buffer, 0)).collect();
        read_words(ctx, &words)
    }

    /// Reads all four words: the count and the indirect-dispatch arguments.
    pub fn read_indirect_args(&self, ctx: &GpuContext) -> Result<[u32; 4], GpuError> {
        let words: Vec<u32> = read_buffer(ctx, &self.buffer, 4)?;
        Ok([words[0], words[1], words[2], words[3]])
    }
}

/// Every primitive kernel, built once per context.
pub struct Primitives {
    /// Whether the kernels were built with subgroup operations.
    pub uses_subgroups: bool,
    pub(crate) scan_chained: Kernel,
    pub(crate) compact_chained: Kernel,
    /// The words of the one-pass scans (`prims/scan_chained.wgsl`), which every scan leaves
    /// zeroed; grown (a new zeroed buffer) when a scan has more blocks than it has room for.
    chain: Mutex<Option<GpuBuffer>>,
    pub(crate) segment_starts: Kernel,
    pub(crate) segmented_scan_finish: Kernel,
    pub(crate) segmented_reduce_finish: Kernel,
    pub(crate) run_heads: Kernel,
    pub(crate) sorted_runs: Kernel,
    pub(crate) radix_histogram: Kernel,
    pub(crate) radix_scatter: Kernel,
    pub(crate) morton_codes: Kernel,
    pub(crate) dispatch_args: Kernel,
}

impl Primitives {
    /// The one-pass scans' words, with room for `num_blocks` blocks (zeroed when new).
    pub(crate) fn chain(&self, ctx: &GpuContext, num_blocks: u32) -> Result<GpuBuffer, GpuError> {
        let words = 2 + 2 * num_blocks as u64;
        // Only poisoned if a thread panicked while swapping it; a new zeroed buffer serves then.
        let mut chain = self.chain.lock().unwrap_or_else(|e| {
            let mut guard = e.into_inner();
            *guard = None;
            guard
        });
        match chain.as_ref() {
            Some(b) if b.size() >= words * 4 => Ok(b.clone()),
            _ => {
                // At least 4 KiB (the words of 511 blocks), a power of two past that.
                let size = (words * 4).max(4096).next_power_of_two();
                let buffer = storage_buffer_sized(ctx, "scan chain", size)?;
                *chain = Some(buffer.clone());
                Ok(buffer)
            }
        }
    }

    /// Builds every kernel, with subgroup operations when the adapter has them.
    pub fn new(ctx: &GpuContext) -> Result<Primitives, GpuError> {
        Primitives::build(ctx, ctx.info.features.subgroups)
    }

    /// Builds every kernel with the shared-memory fallbacks, whatever the adapter has (tests run
    /// both variants).
    pub fn new_without_subgroups(ctx: &GpuContext) -> Result<Primitives, GpuError> {
        Primitives::build(ctx, false)
    }

    /// Tests: the one-pass scans take their blocks last to first, so that every walk back
    /// meets words not yet published and works them out itself (see `prims/scan_chained.wgsl`;
    /// small inputs only, the work grows with the square of the blocks).
    pub fn with_reversed_blocks(ctx: &GpuContext, subgroups: bool) -> Result<Primitives, GpuError> {
        Primitives::build_with(ctx, subgroups, true)
    }

    fn build(ctx: &GpuContext, subgroups: bool) -> Result<Primitives, GpuError> {
        Primitives::build_with(ctx, subgroups, false)
    }

    fn build_with(
        ctx: &GpuContext,
        subgroups: bool,
        reversed: bool,
    ) -> Result<Primitives, GpuError> {
        let mut defines: Vec<&str> = Vec::new();
        if subgroups {
            defines.push("SUBGROUPS");
        }
        let kernel =
            |file: &str| Kernel::new(ctx, &format!("prims/{file}"), &defines, Checks::Checked);
        let chained = |compact: bool| {
            let mut d = defines.clone();
            if compact {
                d.push("COMPACT");
            }
            if reversed {
                d.push("REVERSED_BLOCKS");
            }
            Kernel::new(ctx, "prims/scan_chained.wgsl", &d, Checks::Checked)
        };
        Ok(Primitives {
            uses_subgroups: subgroups,
            scan_chained: chained(false)?,
            compact_chained: chained(true)?,
            chain: Mutex::new(None),
            segment_starts: kernel("segment_starts.wgsl")?,
            segmented_scan_finish: kernel("segmented_scan_finish.wgsl")?,
            segmented_reduce_finish: kernel("segmented_reduce_finish.wgsl")?,
            run_heads: kernel("run_heads.wgsl")?,
            sorted_runs: kernel("sorted_runs.wgsl")?,
            radix_histogram: kernel("radix_histogram.wgsl")?,
            radix_scatter: kernel("radix_scatter.wgsl")?,
            morton_codes: kernel("morton_codes.wgsl")?,
            dispatch_args: kernel("dispatch_args.wgsl")?,
        })
    }
}

/// The parameters of `prims/dispatch_args.wgsl` (layout checked by a test).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct DispatchArgsParams {
    pub count_word: u32,
    pub cap: u32,
    pub workgroup_size: u32,
    pub max_per_dim: u32,
}

/// The workgroups (x, y, z) of an indirect dispatch of a kernel of `workgroup_size` over `count`
/// items, at most `cap`: the CPU twin of `prims/dispatch_args.wgsl`, and the same grid as
/// [`Kernel::grid_for`] gives for a count known on the host (but none for a count of zero).
pub fn dispatch_args_of(count: u32, cap: u32, workgroup_size: u32, max_per_dim: u32) -> [u32; 3] {
    let groups = count.min(cap).div_ceil(workgroup_size.max(1));
    let most = max_per_dim.max(1);
    if groups > most {
        [most, groups.div_ceil(most), 1]
    } else {
        [groups, 1, 1]
    }
}

impl Primitives {
    /// Records, into a fresh buffer made for indirect dispatch, the arguments of a dispatch of
    /// `kernel` over the count at byte `offset` of `counts` (a live count, as the traces take
    /// it), at most `cap` items
    /// (`prims/dispatch_args.wgsl`): the kernel then starts workgroups for the items the device
    /// counted, not for the room it has. Returns the buffer, for
    /// [`Grid::Indirect`](crate::gpu::encoder::Grid::Indirect) at offset 0.
    pub fn dispatch_args(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        kernel: &Kernel,
        (counts, offset): (&GpuBuffer, u64),
        cap: u64,
    ) -> Result<GpuBuffer, GpuError> {
        let count_word = u32::try_from(offset / 4).unwrap_or(u32::MAX);
        let params = uniform_buffer(
            ctx,
            "dispatch args params",
            &DispatchArgsParams {
                count_word,
                cap: u32::try_from(cap).unwrap_or(u32::MAX),
                workgroup_size: kernel.workgroup_size,
                max_per_dim: ctx.info.max_compute_workgroups_per_dimension,
            },
        );
        let usage = wgpu::BufferUsages::INDIRECT.union(crate::gpu::kernel::STORAGE_USAGE);
        let args = crate::gpu::kernel::pooled_buffer(ctx, "dispatch args", 12, usage, false);
        let bind = self.dispatch_args.bind(
            ctx,
            &[("params", &params), ("counts", counts), ("args", &args)],
        )?;
        self.dispatch_args.dispatch(encoder, &bind, (1, 1, 1));
        Ok(args)
    }
}

/// A uniform buffer holding `params`.
pub(crate) fn params_buffer(ctx: &GpuContext, params: PrimParams) -> GpuBuffer {
    uniform_buffer(ctx, "prims params", &params)
}

/// Workgroup counts for `groups` workgroups, spilling into y past the per-dimension limit
/// (kernels recover the index with `block_index`).
pub(crate) fn groups_grid(ctx: &GpuContext, groups: u64) -> (u32, u32, u32) {
    let groups = groups.max(1);
    let max = ctx.info.max_compute_workgroups_per_dimension.max(1) as u64;
    if groups <= max {
        (groups as u32, 1, 1)
    } else {
        (max as u32, groups.div_ceil(max) as u32, 1)
    }
}

/// Workgroups for one invocation per element (kernels recover the index with `element_index`).
pub(crate) fn elements_grid(ctx: &GpuContext, n: u32) -> (u32, u32, u32) {
    groups_grid(ctx, (n as u64).div_ceil(WORKGROUP_SIZE as u64))
}

/// A scratch buffer of `count` u32 words, refused when over the binding limit.
pub(crate) fn scratch_u32(
    ctx: &GpuContext,
    label: &str,
    count: u64,
) -> Result<GpuBuffer, GpuError> {
    storage_buffer_sized(ctx, label, count * 4)
}

/// Checks that `n` elements of `element_bytes` fit in one binding and in `buffer`.
pub(crate) fn check_elements(
    ctx: &GpuContext,
    what: &str,
    buffer: &GpuBuffer,
    n: u32,
    element_bytes: u64,
) -> Result<(), GpuError> {
    if n > MAX_ELEMENTS {
        return Err(GpuError::Device(format!(
            "{what}: {n} elements, but the primitives take at most {MAX_ELEMENTS}"
        )));
    }
    let bytes = n as u64 * element_bytes;
    ctx.check_binding_size(what, bytes)?;
    if buffer.size() < bytes {
        return Err(GpuError::Device(format!(
            "{what}: {n} elements need {bytes} bytes, but the buffer holds {}",
            buffer.size()
        )));
    }
    Ok(())
}

/// An element count from a slice length, refused above [`MAX_ELEMENTS`].
pub(crate) fn element_count(what: &str, len: usize) -> Result<u32, GpuError> {
    u32::try_from(len)
        .ok()
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| {
            GpuError::Device(format!(
                "{what}: {len} elements, but the primitives take at most {MAX_ELEMENTS}"
            ))
        })
}

/// Uploads `data` as a storage buffer (checked against the binding limit).
pub(crate) fn upload<T: Pod>(
    ctx: &GpuContext,
    label: &str,
    data: &[T],
) -> Result<GpuBuffer, GpuError> {
    storage_buffer(ctx, label, data)
}

/// A new command encoder for the `*_vec` conveniences.
pub(crate) fn new_encoder(ctx: &GpuContext) -> Encoder {
    Encoder::new(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader;

    /// Every prims kernel assembles and validates with and without subgroups (the crate-wide naga
    /// test covers this too; this one fails on a prims file alone).
    #[test]
    fn every_prims_kernel_validates_with_and_without_subgroups() {
        let kernels: Vec<_> = shader::kernel_files()
            .filter(|p| p.starts_with("prims/"))
            .collect();
        assert!(kernels.len() >= 10, "{kernels:?}");
        for path in kernels {
            for defines in [&[][..], &["SUBGROUPS"][..]] {
                let source = shader::assemble(path, defines).unwrap_or_else(|e| panic!("{e}"));
                shader::validate(path, &source).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }

    /// The host `DispatchArgsParams` has the size and field offsets naga reflects for its
    /// WGSL twin.
    #[test]
    fn dispatch_args_params_match_their_wgsl_twin() {
        let (span, offsets) =
            shader::struct_layout("prims/dispatch_args.wgsl", "DispatchArgsParams");
        assert_eq!(span as usize, std::mem::size_of::<DispatchArgsParams>());
        let field = |name: &str, offset: usize| (name.to_string(), offset as u32);
        assert_eq!(
            offsets,
            vec![
                field(
                    "count_word",
                    std::mem::offset_of!(DispatchArgsParams, count_word)
                ),
                field("cap", std::mem::offset_of!(DispatchArgsParams, cap)),
                field(
                    "workgroup_size",
                    std::mem::offset_of!(DispatchArgsParams, workgroup_size)
                ),
                field(
                    "max_per_dim",
                    std::mem::offset_of!(DispatchArgsParams, max_per_dim)
                ),
            ]
        );
    }

    /// The CPU twin gives `Kernel::grid_for`'s grid for a count the host knows, and none for
    /// a count of zero.
    #[test]
    fn dispatch_args_cover_the_count_in_whole_workgroups_and_spill_into_y() {
        assert_eq!(dispatch_args_of(0, 100, 64, 65535), [0, 1, 1]);
        assert_eq!(dispatch_args_of(1, 100, 64, 65535), [1, 1, 1]);
        assert_eq!(dispatch_args_of(64, 100, 64, 65535), [1, 1, 1]);
        assert_eq!(dispatch_args_of(65, 100, 64, 65535), [2, 1, 1]);
        // The cap bounds the count (a kernel never covers more than its buffers hold).
        assert_eq!(dispatch_args_of(1000, 100, 64, 65535), [2, 1, 1]);
        // Past the per-dimension limit, x stays at the limit and y covers the rest.
        assert_eq!(dispatch_args_of(10_000, 10_000, 1, 4096), [4096, 3, 1]);
        assert_eq!(dispatch_args_of(8192, 8192, 1, 4096), [4096, 2, 1]);
    }

    /// The host `PrimParams` has the size and field offsets naga reflects for its WGSL twin.
    #[test]
    fn prim_params_matches_its_wgsl_twin() {
        let (span, offsets) = shader::struct_layout("prims/common.wgsl", "PrimParams");
        assert_eq!(span as usize, std::mem::size_of::<PrimParams>());
        assert_eq!(
            offsets,
            vec![
                ("n".to_string(), std::mem::offset_of!(PrimParams, n) as u32),
                (
                    "mode".to_string(),
                    std::mem::offset_of!(PrimParams, mode) as u32
                ),
                (
                    "shift".to_string(),
                    std::mem::offset_of!(PrimParams, shift) as u32
                ),
                (
                    "num_blocks".to_string(),
                    std::mem::offset_of!(PrimParams, num_blocks) as u32
                ),
            ]
        );
    }
}
