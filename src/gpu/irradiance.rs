//! Irradiance interpolation on the GPU (`shaders/irradiance/interpolate.wgsl` on
//! `shaders/shared/irradiance.wgsl`): the twin of `cpu::gather::IrradianceCache::irradiance`,
//! one invocation per shading point.
//!
//! Each invocation runs the kNN search of `shaders/shared/knn.wgsl` for the
//! `INTERPOLATION_NEIGHBOURS` samples nearest to its point (no radius) over the kd-tree of the
//! samples' positions, sorts them as `accel::knn::knn` returns them, and weights them as
//! `render::gather::interpolate_irradiance` does, in the same order and with the same
//! multiply-add-proof distances and dot products (see the module docs of `render::gather`). The
//! neighbours are the CPU's bit for bit; what may differ are the square roots and divisions of
//! Ward's error on GPUs that do not round them correctly, a few units of roundoff.
//!
//! Other kernels may include `shared/irradiance.wgsl` themselves: it declares binding 53
//! (`irradiance_samples: array<IrradianceSample>`) next to the kNN include's 50 (`kd_words`) and
//! 51 (`kd_points`), and `interpolate_irradiance(x, n)`; the kernel must report `knn_error`.
//!
//! Errors are never silent: a tree deeper than the search stack, malformed tree words, a point
//! index without a sample, or a loop a driver stopped early (lavapipe's loop budget) set bits in
//! the output's status word, and [`IrradianceOutput::check`] turns them into a `GpuError`.

use std::sync::OnceLock;

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kdtree::{GpuKdTree, KdTreeBuilder};
use super::kernel::{
    read_buffer, storage_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel,
};
use super::knn::{at_least, status_error, KnnDispatch};
use super::pool::GpuBuffer;
use super::upload::{GpuIrradianceSample, GpuShadingPoint};

/// The parameters of one dispatch. WGSL twin: `IrradianceParams` in
/// `shaders/irradiance/interpolate.wgsl` (size and offsets checked by a test).
#[repr(C)]
#[derive(Pod, Zeroable, Clone, Copy, Debug, Default, PartialEq)]
pub struct IrradianceParams {
    /// Shading points in this dispatch.
    pub query_count: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

/// `IRRADIANCE_ERROR_SAMPLES` in `shaders/shared/irradiance.wgsl`: the tree named a point with
/// no irradiance sample.
const IRRADIANCE_ERROR_SAMPLES: u32 = 8;

/// Bytes of one `ShadingPoint`, `IrradianceSample` and output `vec4`.
const POINT_BYTES: u64 = std::mem::size_of::<GpuShadingPoint>() as u64;
const SAMPLE_BYTES: u64 = std::mem::size_of::<GpuIrradianceSample>() as u64;
const OUT_BYTES: u64 = 16;

/// The compiled interpolation kernel.
pub struct IrradianceKernels {
    interpolate: Kernel,
    /// Made on the first [`IrradianceKernels::interpolate_vec`] (tests and small jobs only).
    builder: OnceLock<KdTreeBuilder>,
}

/// A recorded-ready interpolation dispatch with its bind group (from
/// [`IrradianceKernels::prepare`]): the kNN queries' dispatch, recorded the same way.
pub type IrradianceDispatch<'a> = KnnDispatch<'a>;

/// Where an interpolation writes: one `vec4` (xyz, w = 0) per shading point, and the or-ed error
/// bits of every invocation in `status[0]`. It dereferences to `irradiance`, so it binds where
/// the irradiance buffer is wanted; a point whose search failed holds NaN there, but only
/// [`IrradianceOutput::check`] says why, so call it once the work is submitted.
pub struct IrradianceOutput {
    pub irradiance: GpuBuffer,
    pub status: GpuBuffer,
    pub query_count: u32,
}

impl std::ops::Deref for IrradianceOutput {
    type Target = GpuBuffer;

    fn deref(&self) -> &GpuBuffer {
        &self.irradiance
    }
}

impl IrradianceOutput {
    /// Waits for the GPU, reads the status word and turns error bits into an error: a tree
    /// deeper than the search stack, malformed tree words, a point with no sample, or a search
    /// loop the driver stopped early. Call it before using `irradiance`.
    pub fn check(&self, ctx: &GpuContext) -> Result<(), GpuError> {
        let word: Vec<u32> = read_buffer(ctx, &self.status, 1)?;
        interpolation_status_error(word[0])
    }

    /// Defers [`IrradianceOutput::check`] to the frame's deferred checks (no wait now).
    pub fn defer_check(&self, ctx: &GpuContext) {
        ctx.defer_status_check(&self.status, interpolation_status_error);
    }
}

/// The error an interpolation's status word names: a point with no sample, or the kNN
/// search's own bits.
fn interpolation_status_error(word: u32) -> Result<(), GpuError> {
    if word & IRRADIANCE_ERROR_SAMPLES != 0 {
        return Err(GpuError::Device(
            "the irradiance samples' kd-tree names a point with no irradiance sample (the \
             positions buffer holds more points than the samples buffer)"
                .into(),
        ));
    }
    if word != 0 {
        // The kNN search's own bits, with its messages.
        status_error(word)?;
        return Err(GpuError::Device(format!(
            "irradiance interpolation reported unknown error bits {word:#x}"
        )));
    }
    Ok(())
}

impl IrradianceKernels {
    /// Compiles the interpolation kernel without naga's runtime checks: it bounds every index
    /// it uses itself (those of shared/knn.wgsl, the samples' and its own arrays' lengths), and
    /// tests/gpu_irradiance.rs compares both variants with the CPU twin.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Self::with_checks(ctx, Checks::Unchecked)
    }

    /// Compiles the kernel with or without naga's runtime checks. Without them is safe: the
    /// kNN search bounds every tree and point index itself, sample indices are checked against
    /// the samples' length, and the host checks that the queries and outputs hold `n` entries;
    /// the tests compare both variants with the CPU.
    pub fn with_checks(ctx: &GpuContext, checks: Checks) -> Result<Self, GpuError> {
        Ok(IrradianceKernels {
            interpolate: Kernel::new(ctx, "irradiance/interpolate.wgsl", &[], checks)?,
            builder: OnceLock::new(),
        })
    }

    /// The most shading points one dispatch may take (its queries must fit one storage binding).
    pub fn max_queries(ctx: &GpuContext) -> u32 {
        let limit = ctx.info.binding_limit();
        (limit / POINT_BYTES).min(1 << 30) as u32
    }

    /// Binds an interpolation at the first `n` shading points of `queries`
    /// (`array<ShadingPoint>`) from `samples` (`array<IrradianceSample>`), whose kd-tree is
    /// `tree` (its point i is `samples[i].position`), with fresh outputs.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare<'a>(
        &'a self,
        ctx: &GpuContext,
        samples: &GpuBuffer,
        tree: &GpuKdTree,
        queries: &GpuBuffer,
        n: u32,
    ) -> Result<(IrradianceDispatch<'a>, IrradianceOutput), GpuError> {
        let (words, positions) = (&tree.words, &tree.points);
        let needed = n as u64 * POINT_BYTES;
        if n > 0 && queries.size() < needed {
            return Err(GpuError::Device(format!(
                "irradiance interpolation at {n} shading points needs {needed} bytes of queries, \
                 but the buffer holds {}",
                queries.size()
            )));
        }
        for (what, buffer) in [
            ("irradiance samples", samples),
            ("irradiance kd-tree words", words),
            ("irradiance sample positions", positions),
            ("shading points", queries),
        ] {
            ctx.check_binding_size(what, buffer.size())?;
        }
        let output = IrradianceOutput {
            irradiance: storage_buffer_sized(ctx, "interpolated irradiance", n as u64 * OUT_BYTES)?,
            status: storage_buffer(ctx, "irradiance status", &[0u32])?,
            query_count: n,
        };
        let params = uniform_buffer(
            ctx,
            "irradiance params",
            &IrradianceParams {
                query_count: n,
                ..Default::default()
            },
        );
        let (mut s_holder, mut p_holder, mut q_holder) = (None, None, None);
        let samples = at_least(ctx, samples, SAMPLE_BYTES, &mut s_holder)?;
        let positions = at_least(ctx, positions, 16, &mut p_holder)?;
        let queries = at_least(ctx, queries, POINT_BYTES, &mut q_holder)?;
        let bind = self.interpolate.bind(
            ctx,
            &[
                ("params", &params),
                ("kd_words", words),
                ("kd_points", positions),
                ("kd_leaf_points", &tree.leaf_points),
                ("irradiance_samples", samples),
                ("queries", queries),
                ("out_irradiance", &output.irradiance),
                ("status", &output.status),
            ],
        )?;
        let dispatch = IrradianceDispatch {
            kernel: &self.interpolate,
            bind,
            grid: self.interpolate.grid_for(ctx, n as u64),
            _params: params,
            query_count: n,
        };
        Ok((dispatch, output))
    }

    /// Interpolated irradiance (`vec4`, w = 0) at each of the first `n` shading points of
    /// `queries` (`array<ShadingPoint>`), from `samples` (`array<IrradianceSample>`) whose
    /// kd-tree is `tree`, over the samples' positions (its point i is `samples[i].position`),
    /// recorded into `encoder`. After submitting, call
    /// [`IrradianceOutput::check`] before trusting `irradiance`.
    #[allow(clippy::too_many_arguments)]
    pub fn interpolate(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        samples: &GpuBuffer,
        tree: &GpuKdTree,
        queries: &GpuBuffer,
        n: u32,
    ) -> Result<IrradianceOutput, GpuError> {
        let (dispatch, output) = self.prepare(ctx, samples, tree, queries, n)?;
        dispatch.record(encoder, None);
        Ok(output)
    }

    /// Builds the samples' kd-tree on the GPU (`KdTreeBuilder`), uploads, interpolates at every
    /// shading point and reads the results back (tests, small jobs). Shading points go in
    /// chunks that fit one storage binding.
    pub fn interpolate_vec(
        &self,
        ctx: &GpuContext,
        samples: &[GpuIrradianceSample],
        queries: &[GpuShadingPoint],
    ) -> Result<Vec<Vec3>, GpuError> {
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        let count = u32::try_from(samples.len()).map_err(|_| {
            GpuError::Device(format!(
                "{} irradiance samples are more than a kd-tree holds",
                samples.len()
            ))
        })?;
        let builder = match self.builder.get() {
            Some(b) => b,
            None => {
                let made = KdTreeBuilder::new(ctx)?;
                // Another thread may have set it meanwhile; either builder will do.
                let _ = self.builder.set(made);
                self.builder
                    .get()
                    .ok_or_else(|| GpuError::Device("the kd-tree builder was not kept".into()))?
            }
        };
        let positions: Vec<[f32; 4]> = samples
            .iter()
            .map(|s| [s.position[0], s.position[1], s.position[2], 0.0])
            .collect();
        let position_buffer = storage_buffer(ctx, "irradiance sample positions", &positions)?;
        let sample_buffer = storage_buffer(ctx, "irradiance samples", samples)?;
        let tree = builder.build(ctx, &position_buffer, count)?;
        let chunk = Self::max_queries(ctx).clamp(1, 1 << 22) as usize;
        let mut out = Vec::with_capacity(queries.len());
        for part in queries.chunks(chunk) {
            let query_buffer = storage_buffer(ctx, "shading points", part)?;
            let mut encoder = Encoder::new(ctx);
            let output = self.interpolate(
                ctx,
                &mut encoder,
                &sample_buffer,
                &tree,
                &query_buffer,
                part.len() as u32,
            )?;
            ctx.submit([encoder.finish()]);
            output.check(ctx)?;
            let values: Vec<[f32; 4]> = read_buffer(ctx, &output.irradiance, part.len())?;
            out.extend(values.iter().map(|v| Vec3::new(v[0], v[1], v[2])));
        }
        Ok(out)
    }
}
