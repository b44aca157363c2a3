//! k-nearest-neighbour queries and the photon density estimate on the GPU over point kd-trees
//! (`shaders/kdtree/knn_query.wgsl`, `knn_density.wgsl` on `shaders/shared/knn.wgsl`), the
//! twins of `accel::knn::knn` and `accel::photon_estimate::photon_flux_density`.
//!
//! One invocation per query keeps a private heap of up to [`KNN_MAX_K`] neighbours and a stack
//! of `KD_MAX_BRANCH_DEPTH` far children. The heap's size is compiled in ([`KnnKernel`]): 64
//! entries, or 128 compiled on first need for a larger `k`. It takes the same steps as the CPU search, so the
//! neighbour lists are equal bit for bit and the estimates sum the same photons in the same
//! order. A tree deeper than the stack, or malformed, makes the call fail (`GpuError::Device`).

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kdtree::GpuKdTree;
use super::kernel::{
    read_buffer, storage_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel,
};
use super::pool::GpuBuffer;
use crate::accel::knn::{Neighbour, KNN_MAX_K};
use crate::accel::photon_estimate::{EstimateFilter, PhotonRecord};

/// The parameters of one dispatch. WGSL twin: `KnnParams` in `shaders/kdtree/knn_query.wgsl`
/// and `knn_density.wgsl` (sizes and offsets checked by a test).
#[repr(C)]
#[derive(Pod, Zeroable, Clone, Copy, Debug, Default, PartialEq)]
pub struct KnnParams {
    /// Queries in this dispatch.
    pub query_count: u32,
    /// The first query of this dispatch in the query buffer (outputs start at 0).
    pub first_query: u32,
    pub k: u32,
    pub max_dist2: f32,
    /// `EstimateFilter::code` (density only).
    pub filter_code: u32,
    /// `EstimateFilter::cone_k` (density only).
    pub cone_k: f32,
    /// Nonzero: the density queries are taken in the order of the `order` binding (a
    /// permutation of `0..query_count`, such as their Morton order), each written at its own
    /// slot.
    pub ordered: u32,
    pub _pad1: u32,
}

/// `knn_error` bits (shaders/shared/knn.wgsl).
const KNN_ERROR_STACK: u32 = 1;
const KNN_ERROR_TREE: u32 = 2;
const KNN_ERROR_LOOP_CUT: u32 = 4;
const KNN_ERROR_HEAP: u32 = 8;

/// The largest `k` of a kNN kernel compiled with the small heap (`shaders/shared/knn_heap.wgsl`).
pub const KNN_SMALL_HEAP: u32 = 64;

/// A kernel on `shaders/shared/knn_heap.wgsl` whose `k` comes at run time: compiled with a heap
/// of [`KNN_SMALL_HEAP`] entries, and with one of [`KNN_MAX_K`] (`KNN_HEAP_128`) the first time
/// a larger `k` asks for it. The heap is private memory of every invocation, so a frame's k = 64
/// searches don't carry the room of 128.
pub struct KnnKernel {
    small: Kernel,
    large: std::sync::OnceLock<Kernel>,
    path: &'static str,
    defines: Vec<&'static str>,
    checks: Checks,
}

impl KnnKernel {
    pub fn new(
        ctx: &GpuContext,
        path: &'static str,
        defines: &[&'static str],
        checks: Checks,
    ) -> Result<KnnKernel, GpuError> {
        Ok(KnnKernel {
            small: Kernel::new(ctx, path, defines, checks)?,
            large: std::sync::OnceLock::new(),
            path,
            defines: defines.to_vec(),
            checks,
        })
    }

    /// The variant whose heap holds `k` (checked against [`KNN_MAX_K`] by the callers).
    pub fn for_k(&self, ctx: &GpuContext, k: u32) -> Result<&Kernel, GpuError> {
        if k <= KNN_SMALL_HEAP {
            return Ok(&self.small);
        }
        if let Some(kernel) = self.large.get() {
            return Ok(kernel);
        }
        let mut defines = self.defines.clone();
        defines.push("KNN_HEAP_128");
        let kernel = Kernel::new(ctx, self.path, &defines, self.checks)?;
        Ok(self.large.get_or_init(|| kernel))
    }
}

/// The compiled query kernels.
pub struct KnnQueries {
    query: KnnKernel,
    density: KnnKernel,
    octahedral: Kernel,
}

/// One recorded-ready dispatch of a query kernel with its bind group (made by
/// [`KnnQueries::prepare_knn`] or [`KnnQueries::prepare_density`]); record it as often as needed.
pub struct KnnDispatch<'a> {
    pub(crate) kernel: &'a Kernel,
    pub(crate) bind: wgpu::BindGroup,
    pub(crate) grid: (u32, u32, u32),
    pub(crate) _params: GpuBuffer,
    pub query_count: u32,
}

impl KnnDispatch<'_> {
    /// Records the dispatch in its own compute pass, with `timestamp_writes` around it if given.
    pub fn record(
        &self,
        encoder: &mut Encoder,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) {
        if self.query_count == 0 {
            return;
        }
        encoder.dispatch_in_pass(
            &self.kernel.name,
            &self.kernel.pipeline,
            &self.bind,
            self.grid,
            timestamp_writes,
        );
    }
}

/// Where a kNN dispatch writes: `k` slots per query in `indices` and `dist2` (ascending; the
/// first `counts[q]` are written), and the or-ed error bits in `status[0]` (zero it first).
pub struct KnnOutput {
    pub indices: GpuBuffer,
    pub dist2: GpuBuffer,
    pub counts: GpuBuffer,
    pub status: GpuBuffer,
}

/// Where a density dispatch writes: one `vec4` (xyz) per query, and the or-ed error bits.
pub struct DensityOutput {
    pub density: GpuBuffer,
    pub status: GpuBuffer,
}

/// The GPU's limits on `k`: 1..=`KNN_MAX_K`.
pub fn check_k(k: u32) -> Result<(), GpuError> {
    if k == 0 || k as usize > KNN_MAX_K {
        return Err(GpuError::Device(format!(
            "a GPU kNN query takes k from 1 to {KNN_MAX_K}, not {k}"
        )));
    }
    Ok(())
}

/// Reads a dispatch's status word (`KnnOutput::status`, `DensityOutput::status`; waits for the
/// GPU) and turns error bits into an error: a tree deeper than the stack, malformed words, or a
/// loop the driver stopped early.
pub fn check_status(ctx: &GpuContext, status: &GpuBuffer) -> Result<(), GpuError> {
    let word: Vec<u32> = read_buffer(ctx, status, 1)?;
    status_error(word[0])
}

/// The message for nonzero `knn_error` bits.
pub fn status_error(status: u32) -> Result<(), GpuError> {
    if status & KNN_ERROR_STACK != 0 {
        return Err(GpuError::Device(format!(
            "the kd-tree branches deeper than the GPU query stack of {} entries",
            crate::accel::kdtree::KD_MAX_BRANCH_DEPTH
        )));
    }
    if status & KNN_ERROR_LOOP_CUT != 0 {
        return Err(GpuError::Device(
            "the GPU driver stopped a kNN search loop early (lavapipe ends every loop after \
             65535 loop iterations per invocation group); use fewer points per query, a \
             search radius, or another adapter"
                .into(),
        ));
    }
    if status & KNN_ERROR_HEAP != 0 {
        return Err(GpuError::Device(
            "a kNN kernel was dispatched with a k larger than the heap it was compiled with".into(),
        ));
    }
    if status & KNN_ERROR_TREE != 0 {
        return Err(GpuError::Device(
            "the kd-tree words are malformed (an index points outside the tree or the points)"
                .into(),
        ));
    }
    Ok(())
}

/// A buffer of at least `min_bytes` (one element of the WGSL array it is bound to): `buffer`
/// itself, or a zeroed placeholder for an empty input.
pub(crate) fn at_least<'a>(
    ctx: &GpuContext,
    buffer: &'a GpuBuffer,
    min_bytes: u64,
    holder: &'a mut Option<GpuBuffer>,
) -> Result<&'a GpuBuffer, GpuError> {
    if buffer.size() >= min_bytes {
        return Ok(buffer);
    }
    let placeholder = storage_buffer(ctx, "placeholder", &vec![0u8; min_bytes as usize])?;
    Ok(holder.insert(placeholder))
}

/// `(position, normal)` queries as the density and lookup kernels read them: two `vec4` each.
pub(super) fn position_normal_queries(queries: &[(Vec3, Vec3)]) -> Vec<[f32; 4]> {
    queries
        .iter()
        .flat_map(|(x, n)| [[x.x, x.y, x.z, 0.0], [n.x, n.y, n.z, 0.0]])
        .collect()
}

fn zeroed_status(ctx: &GpuContext) -> Result<GpuBuffer, GpuError> {
    storage_buffer(ctx, "kNN status", &[0u32])
}

impl KnnQueries {
    /// Compiles the query kernels without naga's runtime checks, which made them 1.2-1.4×
    /// slower on the lent H100 (docs/performance.md).
    pub fn new(ctx: &GpuContext) -> Result<KnnQueries, GpuError> {
        Self::with_checks(ctx, Checks::Unchecked)
    }

    /// Compiles the query kernels with or without naga's runtime checks. Without them is safe:
    /// every index the kernels use is bounded by a check of their own (tree words and point
    /// indices against the arrays' lengths, heap and stack positions by construction, queries
    /// and outputs against theirs), and the tests compare both variants with the CPU.
    pub fn with_checks(ctx: &GpuContext, checks: Checks) -> Result<KnnQueries, GpuError> {
        Ok(KnnQueries {
            query: KnnKernel::new(ctx, "kdtree/knn_query.wgsl", &[], checks)?,
            density: KnnKernel::new(ctx, "kdtree/knn_density.wgsl", &[], checks)?,
            octahedral: Kernel::new(
                ctx,
                "kdtree/knn_octahedral_check.wgsl",
                &[],
                Checks::Checked,
            )?,
        })
    }

    /// The most queries one kNN dispatch with this `k` may take (its outputs must fit one
    /// storage binding).
    pub fn max_knn_queries(ctx: &GpuContext, k: u32) -> u32 {
        let limit = ctx.info.binding_limit();
        (limit / (k.max(1) as u64 * 4)).min(1 << 30) as u32
    }

    /// Binds a kNN search of `k` neighbours within `max_dist2` for the `query_count` queries
    /// starting at `first_query` of `queries` (`array<vec4<f32>>`, xyz), over `tree` (built on
    /// the device, or made on the CPU and uploaded: `GpuKdTree::upload`), with fresh outputs.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare_knn<'a>(
        &'a self,
        ctx: &GpuContext,
        tree: &GpuKdTree,
        queries: &GpuBuffer,
        first_query: u32,
        query_count: u32,
        k: u32,
        max_dist2: f32,
    ) -> Result<(KnnDispatch<'a>, KnnOutput), GpuError> {
        check_k(k)?;
        check_query_range(queries, first_query, query_count, 16)?;
        let slots = query_count as u64 * k as u64 * 4;
        let output = KnnOutput {
            indices: storage_buffer_sized(ctx, "kNN indices", slots)?,
            dist2: storage_buffer_sized(ctx, "kNN squared distances", slots)?,
            counts: storage_buffer_sized(ctx, "kNN counts", query_count as u64 * 4)?,
            status: zeroed_status(ctx)?,
        };
        let params = uniform_buffer(
            ctx,
            "kNN params",
            &KnnParams {
                query_count,
                first_query,
                k,
                max_dist2,
                ..Default::default()
            },
        );
        let (mut p_holder, mut q_holder) = (None, None);
        let points = at_least(ctx, &tree.points, 16, &mut p_holder)?;
        let queries = at_least(ctx, queries, 16, &mut q_holder)?;
        let kernel = self.query.for_k(ctx, k)?;
        let bind = kernel.bind(
            ctx,
            &[
                ("params", &params),
                ("kd_words", &tree.words),
                ("kd_points", points),
                ("kd_leaf_points", &tree.leaf_points),
                ("queries", queries),
                ("out_index", &output.indices),
                ("out_dist2", &output.dist2),
                ("out_count", &output.counts),
                ("status", &output.status),
            ],
        )?;
        let dispatch = KnnDispatch {
            kernel,
            bind,
            grid: kernel.grid_for(ctx, query_count as u64),
            _params: params,
            query_count,
        };
        Ok((dispatch, output))
    }

    /// Binds photon density estimates for the `query_count` queries starting at `first_query`
    /// of `queries` (two `vec4` per query: position, normal) over the photon tree `tree` and
    /// the `photons` (`array<PhotonRecord>`, `photons[i]` at the tree's point i).
    #[allow(clippy::too_many_arguments)]
    pub fn prepare_density<'a>(
        &'a self,
        ctx: &GpuContext,
        tree: &GpuKdTree,
        photons: &GpuBuffer,
        queries: &GpuBuffer,
        first_query: u32,
        query_count: u32,
        k: u32,
        max_dist2: f32,
        filter: EstimateFilter,
        order: Option<&GpuBuffer>,
    ) -> Result<(KnnDispatch<'a>, DensityOutput), GpuError> {
        check_k(k)?;
        check_query_range(queries, first_query, query_count, 32)?;
        if let Some(order) = order {
            if order.size() < query_count as u64 * 4 {
                return Err(GpuError::Device(format!(
                    "a density order of {} bytes for {query_count} queries",
                    order.size()
                )));
            }
        }
        let output = DensityOutput {
            density: storage_buffer_sized(ctx, "photon densities", query_count as u64 * 16)?,
            status: zeroed_status(ctx)?,
        };
        let params = uniform_buffer(
            ctx,
            "density params",
            &KnnParams {
                query_count,
                first_query,
                k,
                max_dist2,
                filter_code: filter.code(),
                cone_k: filter.cone_k(),
                ordered: u32::from(order.is_some()),
                ..Default::default()
            },
        );
        let (mut p_holder, mut ph_holder, mut q_holder) = (None, None, None);
        // Without an order the binding holds a placeholder the kernel never reads.
        let mut o_holder = None;
        let order = match order {
            Some(order) => order,
            None => at_least(ctx, &output.status, 8, &mut o_holder)?,
        };
        let points = at_least(ctx, &tree.points, 16, &mut p_holder)?;
        let photon_size = std::mem::size_of::<PhotonRecord>() as u64;
        let photons = at_least(ctx, photons, photon_size, &mut ph_holder)?;
        let queries = at_least(ctx, queries, 32, &mut q_holder)?;
        let kernel = self.density.for_k(ctx, k)?;
        let bind = kernel.bind(
            ctx,
            &[
                ("params", &params),
                ("kd_words", &tree.words),
                ("kd_points", points),
                ("kd_leaf_points", &tree.leaf_points),
                ("kd_photons", photons),
                ("queries", queries),
                ("out_density", &output.density),
                ("status", &output.status),
                ("order", order),
            ],
        )?;
        let dispatch = KnnDispatch {
            kernel,
            bind,
            grid: kernel.grid_for(ctx, query_count as u64),
            _params: params,
            query_count,
        };
        Ok((dispatch, output))
    }

    /// The `k` nearest points to each query within `max_dist2`, sorted by (dist2, index), as
    /// `accel::knn::knn` finds them, over `tree` as in [`KnnQueries::prepare_knn`].
    /// Queries go in chunks whose outputs fit one storage binding.
    pub fn knn_vec(
        &self,
        ctx: &GpuContext,
        tree: &GpuKdTree,
        queries: &[Vec3],
        k: u32,
        max_dist2: f32,
    ) -> Result<Vec<Vec<Neighbour>>, GpuError> {
        check_k(k)?;
        let chunk = Self::max_knn_queries(ctx, k).clamp(1, 1 << 22) as usize;
        let mut out = Vec::with_capacity(queries.len());
        for part in queries.chunks(chunk) {
            let data: Vec<[f32; 4]> = part.iter().map(|q| [q.x, q.y, q.z, 0.0]).collect();
            let buffer = storage_buffer(ctx, "kNN queries", &data)?;
            let n = part.len() as u32;
            let (dispatch, output) = self.prepare_knn(ctx, tree, &buffer, 0, n, k, max_dist2)?;
            let mut encoder = Encoder::new(ctx);
            dispatch.record(&mut encoder, None);
            ctx.submit([encoder.finish()]);
            check_status(ctx, &output.status)?;
            let counts: Vec<u32> = read_buffer(ctx, &output.counts, part.len())?;
            let slots = part.len() * k as usize;
            let indices: Vec<u32> = read_buffer(ctx, &output.indices, slots)?;
            let dist2: Vec<f32> = read_buffer(ctx, &output.dist2, slots)?;
            for (q, &count) in counts.iter().enumerate() {
                let base = q * k as usize;
                let count = (count as usize).min(k as usize);
                out.push(
                    (base..base + count)
                        .map(|s| Neighbour {
                            dist2: dist2[s],
                            index: indices[s],
                        })
                        .collect(),
                );
            }
        }
        Ok(out)
    }

    /// The photon flux density at each (position, normal) as
    /// `accel::photon_estimate::photon_flux_density` computes it; buffers as in
    /// [`KnnQueries::prepare_density`].
    #[allow(clippy::too_many_arguments)]
    pub fn flux_density_vec(
        &self,
        ctx: &GpuContext,
        tree: &GpuKdTree,
        photons: &GpuBuffer,
        queries: &[(Vec3, Vec3)],
        k: u32,
        max_dist2: f32,
        filter: EstimateFilter,
    ) -> Result<Vec<Vec3>, GpuError> {
        check_k(k)?;
        let mut out = Vec::with_capacity(queries.len());
        for part in queries.chunks(1 << 22) {
            let buffer = storage_buffer(ctx, "density queries", &position_normal_queries(part))?;
            let count = part.len() as u32;
            let (dispatch, output) = self.prepare_density(
                ctx, tree, photons, &buffer, 0, count, k, max_dist2, filter, None,
            )?;
            let mut encoder = Encoder::new(ctx);
            dispatch.record(&mut encoder, None);
            ctx.submit([encoder.finish()]);
            check_status(ctx, &output.status)?;
            let density: Vec<[f32; 4]> = read_buffer(ctx, &output.density, part.len())?;
            out.extend(density.iter().map(|d| Vec3::new(d[0], d[1], d[2])));
        }
        Ok(out)
    }

    /// Runs the WGSL octahedral code (`shaders/shared/photon_estimate.wgsl`) for the tests:
    /// `octahedral_encode` of each direction, and `octahedral_decode_l1` and `octahedral_decode`
    /// of each code.
    pub fn octahedral_check_vec(
        &self,
        ctx: &GpuContext,
        directions: &[Vec3],
        codes: &[u32],
    ) -> Result<OctahedralCheck, GpuError> {
        if directions.is_empty() && codes.is_empty() {
            return Ok(OctahedralCheck::default());
        }
        // Each input holds at least one entry, so that it binds; the extra results are dropped.
        let mut dirs: Vec<[f32; 4]> = directions.iter().map(|d| [d.x, d.y, d.z, 0.0]).collect();
        let mut code_list = codes.to_vec();
        dirs.resize(dirs.len().max(1), [0.0, 0.0, 1.0, 0.0]);
        code_list.resize(code_list.len().max(1), 0);
        let dir_buffer = storage_buffer(ctx, "directions", &dirs)?;
        let code_buffer = storage_buffer(ctx, "codes", &code_list)?;
        let encoded = storage_buffer_sized(ctx, "encoded", dirs.len() as u64 * 4)?;
        let decoded = storage_buffer_sized(ctx, "decoded", code_list.len() as u64 * 32)?;
        let words = storage_buffer(ctx, "no tree", &[crate::accel::kdtree::KD_LEAF])?;
        let points = storage_buffer(ctx, "no points", &[[0f32; 4]])?;
        let leaf_points = storage_buffer(ctx, "no leaf points", &[[0f32; 4]])?;
        let photons = storage_buffer(ctx, "no photons", &[PhotonRecord::zeroed()])?;
        let bind = self.octahedral.bind(
            ctx,
            &[
                ("kd_words", &words),
                ("kd_points", &points),
                ("kd_leaf_points", &leaf_points),
                ("kd_photons", &photons),
                ("directions", &dir_buffer),
                ("codes", &code_buffer),
                ("encoded", &encoded),
                ("decoded", &decoded),
            ],
        )?;
        let n = dirs.len().max(code_list.len()) as u64;
        let mut encoder = Encoder::new(ctx);
        self.octahedral
            .dispatch(&mut encoder, &bind, self.octahedral.grid_for(ctx, n));
        ctx.submit([encoder.finish()]);
        let encoded: Vec<u32> = read_buffer(ctx, &encoded, directions.len())?;
        let decoded: Vec<[f32; 4]> = read_buffer(ctx, &decoded, codes.len() * 2)?;
        let xyz = |v: [f32; 4]| Vec3::new(v[0], v[1], v[2]);
        Ok(OctahedralCheck {
            encoded,
            decoded_l1: decoded.iter().step_by(2).map(|&v| xyz(v)).collect(),
            decoded: decoded.iter().skip(1).step_by(2).map(|&v| xyz(v)).collect(),
        })
    }
}

/// What [`KnnQueries::octahedral_check_vec`] computed on the GPU.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OctahedralCheck {
    /// `octahedral_encode` of each direction.
    pub encoded: Vec<u32>,
    /// `octahedral_decode_l1` of each code.
    pub decoded_l1: Vec<Vec3>,
    /// `octahedral_decode` of each code.
    pub decoded: Vec<Vec3>,
}

/// Checks that `queries` holds `first + count` entries of `entry_bytes`.
fn check_query_range(
    queries: &GpuBuffer,
    first: u32,
    count: u32,
    entry_bytes: u64,
) -> Result<(), GpuError> {
    let needed = (first as u64 + count as u64) * entry_bytes;
    if count > 0 && queries.size() < needed {
        return Err(GpuError::Device(format!(
            "the query buffer holds {} bytes, but queries {first}..{} need {needed}",
            queries.size(),
            first as u64 + count as u64
        )));
    }
    Ok(())
}
