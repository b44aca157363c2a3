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
pub(crate) const MODE_ADD_BLOCK_OFFSETS: u32 = 8;

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
    pub(crate) scan_reduce: Kernel,
    pub(crate) scan_block: Kernel,
    pub(crate) compact_scatter: Kernel,
    pub(crate) segment_starts: Kernel,
    pub(crate) segmented_scan_finish: Kernel,
    pub(crate) segmented_reduce_finish: Kernel,
    pub(crate) run_heads: Kernel,
    pub(crate) sorted_runs: Kernel,
    pub(crate) radix_histogram: Kernel,
    pub(crate) radix_scatter: Kernel,
    pub(crate) morton_codes: Kernel,
}

impl Primitives {
    /// Builds every kernel, with subgroup operations when the adapter has them.
    pub fn new(ctx: &GpuContext) -> Result<Primitives, GpuError> {
        Primitives::build(ctx, ctx.info.features.subgroups)
    }

    /// Builds every kernel with the shared-memory fallbacks, whatever the adapter has (tests run
    /// both variants).
    pub fn new_without_subgroups(ctx: &GpuContext) -> Result<Primitives, GpuError> {
        Primitives::build(ctx, false)
    }

    fn build(ctx: &GpuContext, subgroups: bool) -> Result<Primitives, GpuError> {
        let defines: &[&str] = if subgroups { &["SUBGROUPS"] } else { &[] };
        let kernel =
            |file: &str| Kernel::new(ctx, &format!("prims/{file}"), defines, Checks::Checked);
        Ok(Primitives {
            uses_subgroups: subgroups,
            scan_reduce: kernel("scan_reduce.wgsl")?,
            scan_block: kernel("scan_block.wgsl")?,
            compact_scatter: kernel("compact_scatter.wgsl")?,
            segment_starts: kernel("segment_starts.wgsl")?,
            segmented_scan_finish: kernel("segmented_scan_finish.wgsl")?,
            segmented_reduce_finish: kernel("segmented_reduce_finish.wgsl")?,
            run_heads: kernel("run_heads.wgsl")?,
            sorted_runs: kernel("sorted_runs.wgsl")?,
            radix_histogram: kernel("radix_histogram.wgsl")?,
            radix_scatter: kernel("radix_scatter.wgsl")?,
            morton_codes: kernel("morton_codes.wgsl")?,
        })
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

    /// The host `PrimParams` has the size and field offsets naga reflects for its WGSL twin.
    #[test]
    fn prim_params_matches_its_wgsl_twin() {
        let source = shader::assemble("prims/common.wgsl", &[]).unwrap();
        let module = shader::validate("prims/common.wgsl", &source).unwrap();
        let (_, ty) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("PrimParams"))
            .expect("common.wgsl declares PrimParams");
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            panic!("PrimParams is a struct");
        };
        assert_eq!(*span as usize, std::mem::size_of::<PrimParams>());
        let offsets: Vec<(String, u32)> = members
            .iter()
            .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
            .collect();
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
