//! The LBVH builder on the GPU (Karras 2012): the same binary tree as the CPU twin
//! [`build_lbvh`](crate::accel::lbvh::build_lbvh), record for record and bit for bit, as
//! [`BinaryNodeRecord`]s.
//!
//! [`LbvhBuilder::record_build`] records, reading nothing back:
//!
//! 1. `bvh/lbvh_codes.wgsl`: the Morton code of every box's centroid in the host's
//!    [`LbvhFrame`] (keys) and the indices `0..n` (values);
//! 2. [`Primitives::radix_sort_u32`] by the 30 code bits (stable: equal codes keep index order),
//!    which leaves the primitive order in the values;
//! 3. `bvh/lbvh_hierarchy.wgsl`, one invocation per sorted position: the leaf's record and the
//!    internal node's children, parent links and range (`first`/`count` straight from the
//!    node's range of positions, which equals the min of the children's `first` and the sum of
//!    their counts), bounds pending, and the node's arrival counter zeroed;
//! 4. `bvh/lbvh_bounds.wgsl`, one invocation per leaf walking up with one atomic counter per
//!    internal node: the second arrival at a node joins its children's boxes. Bound words are
//!    stored and loaded atomically and a pending word is waited for (with a fallback that joins
//!    the leaves), so no visibility order between different words is assumed (see the kernel).
//!
//! Memory while a build runs: 48 bytes a node (`2n − 1` nodes), and per primitive 4 bytes of
//! order, 4 of codes, 4 of counters and the radix sort's 8 of ping-pong buffers.

use bytemuck::{Pod, Zeroable};

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kernel::{pooled_buffer, read_buffer, uniform_buffer, Checks, Kernel, STORAGE_USAGE};
use super::pool::GpuBuffer;
use super::prims::Primitives;
use crate::accel::aabb::Aabb;
use crate::accel::bvh::BinaryNodeRecord;
use crate::accel::lbvh::{lbvh_frame, LbvhFrame};

/// The most primitives one build takes (node indices and the kernels' `i32` range arithmetic
/// stay far from overflow; the binding limit refuses far fewer on most adapters).
pub const MAX_LBVH_PRIMITIVES: u32 = 1 << 28;

/// Bits of the Morton codes the radix sort orders.
const CODE_BITS: u32 = 30;

/// The uniform of every LBVH kernel. Twin of `LbvhParams` in `shaders/bvh/lbvh_common.wgsl`;
/// a test checks naga's layout against this one.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct LbvhParams {
    /// Primitives.
    pub n: u32,
    pub _pad: [u32; 3],
    /// xyz: the Morton frame's low corner.
    pub lo: [f32; 4],
    /// xyz: the Morton frame's cells per unit length.
    pub scale: [f32; 4],
}

/// What a build leaves on the device.
pub struct LbvhBuffers {
    /// `max(2n − 1, 1)` [`BinaryNodeRecord`]s: internal node `k` at `k` (the root at 0), leaf
    /// `k` at `n − 1 + k` (as `accel::lbvh` numbers them).
    pub nodes: GpuBuffer,
    /// `max(n, 1)` `u32`: the primitive of each leaf, in sorted order.
    pub prim_order: GpuBuffer,
}

/// `bounds` as the builder reads them (`boxes` of `record_build`): two `vec4<f32>` per
/// primitive, the low corner and the high one (w unused).
pub fn box_words(bounds: &[Aabb]) -> Vec<[[f32; 4]; 2]> {
    bounds
        .iter()
        .map(|b| [b.min.extend(0.0).to_array(), b.max.extend(0.0).to_array()])
        .collect()
}

/// The LBVH kernels, built once per context.
pub struct LbvhBuilder {
    codes: Kernel,
    hierarchy: Kernel,
    bounds: Kernel,
}

impl LbvhBuilder {
    /// Builds the three kernels.
    pub fn new(ctx: &GpuContext) -> Result<LbvhBuilder, GpuError> {
        let kernel = |file: &str| Kernel::new(ctx, &format!("bvh/{file}"), &[], Checks::Checked);
        Ok(LbvhBuilder {
            codes: kernel("lbvh_codes.wgsl")?,
            hierarchy: kernel("lbvh_hierarchy.wgsl")?,
            bounds: kernel("lbvh_bounds.wgsl")?,
        })
    }

    /// Records the LBVH over the `n` boxes in `boxes` (`array<vec4<f32>>`, two a primitive:
    /// `lo.xyz`, `hi.xyz`; w is ignored) with the Morton `frame` (normally
    /// [`lbvh_frame`] of the same boxes) into `encoder`; nothing is read back.
    pub fn record_build(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        prims: &Primitives,
        boxes: &GpuBuffer,
        n: u32,
        frame: &LbvhFrame,
    ) -> Result<LbvhBuffers, GpuError> {
        let LbvhBuffers { nodes, prim_order } = output_buffers(ctx, "LBVH", boxes, n)?;
        if n == 0 {
            return Ok(LbvhBuffers { nodes, prim_order });
        }
        // Zeroed by the hierarchy kernel before the bounds kernel counts in them.
        let counters = sized_buffer(ctx, "LBVH counters", (n as u64 - 1).max(1) * 4)?;
        let (codes, params) =
            self.record_morton_order(ctx, encoder, prims, boxes, n, frame, &prim_order)?;

        let bind = self.hierarchy.bind(
            ctx,
            &[
                ("params", &params),
                ("codes", &codes),
                ("order", &prim_order),
                ("boxes", boxes),
                ("nodes", &nodes),
                ("counters", &counters),
            ],
        )?;
        self.hierarchy
            .dispatch(encoder, &bind, self.hierarchy.grid_for(ctx, n as u64));

        if n >= 2 {
            let bind = self.bounds.bind(
                ctx,
                &[
                    ("params", &params),
                    ("nodes", &nodes),
                    ("counters", &counters),
                ],
            )?;
            self.bounds
                .dispatch(encoder, &bind, self.bounds.grid_for(ctx, n as u64));
        }
        Ok(LbvhBuffers { nodes, prim_order })
    }

    /// Records the first two steps, shared with the PLOC builder (`gpu::ploc`): the Morton codes
    /// of the `n > 0` boxes' centroids in `frame` and their stable radix sort, which leaves the
    /// sorted codes in the returned buffer and the primitives in sorted order in `order`
    /// (`n` words); also returns the kernels' parameters.
    #[allow(clippy::too_many_arguments)]
    pub fn record_morton_order(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        prims: &Primitives,
        boxes: &GpuBuffer,
        n: u32,
        frame: &LbvhFrame,
        order: &GpuBuffer,
    ) -> Result<(GpuBuffer, GpuBuffer), GpuError> {
        let codes = sized_buffer(ctx, "LBVH codes", n as u64 * 4)?;
        let params = uniform_buffer(
            ctx,
            "LBVH params",
            &LbvhParams {
                n,
                _pad: [0; 3],
                lo: [frame.lo.x, frame.lo.y, frame.lo.z, 0.0],
                scale: [frame.scale.x, frame.scale.y, frame.scale.z, 0.0],
            },
        );
        let bind = self.codes.bind(
            ctx,
            &[
                ("params", &params),
                ("boxes", boxes),
                ("keys", &codes),
                ("values", order),
            ],
        )?;
        self.codes
            .dispatch(encoder, &bind, self.codes.grid_for(ctx, n as u64));
        prims.radix_sort_u32(ctx, encoder, &codes, order, n, CODE_BITS)?;
        Ok((codes, params))
    }

    /// Uploads `bounds`, builds their LBVH on the GPU (in the frame [`lbvh_frame`] gives) and
    /// reads the records and the primitive order back, for tests and benchmarks.
    pub fn build_vec(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        bounds: &[Aabb],
    ) -> Result<(Vec<BinaryNodeRecord>, Vec<u32>), GpuError> {
        build_and_read(ctx, "LBVH", bounds, |encoder, boxes, n, frame| {
            self.record_build(ctx, encoder, prims, boxes, n, frame)
        })
    }
}

/// What a GPU builder (`builder` names it in errors) writes for `n` primitives, allocated: room
/// for `max(2n − 1, 1)` records and `max(n, 1)` references. Refuses more than
/// [`MAX_LBVH_PRIMITIVES`] and, for `n > 0`, a `boxes` buffer that holds fewer than `n` boxes or
/// exceeds the binding limit.
pub(crate) fn output_buffers(
    ctx: &GpuContext,
    builder: &str,
    boxes: &GpuBuffer,
    n: u32,
) -> Result<LbvhBuffers, GpuError> {
    if n > MAX_LBVH_PRIMITIVES {
        return Err(GpuError::Device(format!(
            "{builder}: {n} primitives, but a build takes at most {MAX_LBVH_PRIMITIVES}"
        )));
    }
    let node_count = (2 * n as u64).saturating_sub(1).max(1);
    let record_bytes = std::mem::size_of::<BinaryNodeRecord>() as u64;
    let nodes = sized_buffer(ctx, &format!("{builder} nodes"), node_count * record_bytes)?;
    let prim_order = sized_buffer(
        ctx,
        &format!("{builder} primitive order"),
        n.max(1) as u64 * 4,
    )?;
    if n > 0 {
        if boxes.size() < n as u64 * 32 {
            return Err(GpuError::Device(format!(
                "{builder}: {n} boxes need {} bytes, but the buffer holds {}",
                n as u64 * 32,
                boxes.size()
            )));
        }
        ctx.check_binding_size(&format!("{builder} boxes"), boxes.size())?;
    }
    Ok(LbvhBuffers { nodes, prim_order })
}

/// Uploads `bounds`, records one builder's tree over them with `record` (given the encoder, the
/// boxes, their count and their Morton frame), submits it and reads the records and the
/// primitive order back: `build_vec` of both GPU builders.
pub(crate) fn build_and_read(
    ctx: &GpuContext,
    builder: &str,
    bounds: &[Aabb],
    record: impl FnOnce(&mut Encoder, &GpuBuffer, u32, &LbvhFrame) -> Result<LbvhBuffers, GpuError>,
) -> Result<(Vec<BinaryNodeRecord>, Vec<u32>), GpuError> {
    let n = u32::try_from(bounds.len())
        .ok()
        .filter(|&n| n <= MAX_LBVH_PRIMITIVES)
        .ok_or_else(|| {
            GpuError::Device(format!(
                "{builder}: {} primitives, but a build takes at most {MAX_LBVH_PRIMITIVES}",
                bounds.len()
            ))
        })?;
    if n == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let boxes =
        super::kernel::storage_buffer(ctx, &format!("{builder} boxes"), &box_words(bounds))?;
    let frame = lbvh_frame(bounds);
    let mut encoder = Encoder::new(ctx);
    let built = record(&mut encoder, &boxes, n, &frame)?;
    ctx.submit([encoder.finish()]);
    let nodes = read_buffer(ctx, &built.nodes, 2 * n as usize - 1)?;
    let order = read_buffer(ctx, &built.prim_order, n as usize)?;
    Ok((nodes, order))
}

/// A storage buffer of `size` bytes whose contents the build writes before it reads them (not
/// zeroed), refused when over the binding limit.
pub(crate) fn sized_buffer(
    ctx: &GpuContext,
    label: &str,
    size: u64,
) -> Result<GpuBuffer, GpuError> {
    ctx.check_binding_size(label, size)?;
    Ok(pooled_buffer(ctx, label, size, STORAGE_USAGE, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader;

    fn field(name: &str, offset: usize) -> (String, u32) {
        (name.to_string(), offset as u32)
    }

    /// The host `LbvhParams` has the size and field offsets naga reflects for its WGSL twin.
    #[test]
    fn lbvh_params_match_their_wgsl_twin() {
        let (span, offsets) = shader::struct_layout("bvh/lbvh_codes.wgsl", "LbvhParams");
        assert_eq!(span as usize, std::mem::size_of::<LbvhParams>());
        let names: Vec<(String, u32)> = offsets
            .into_iter()
            .filter(|(n, _)| !n.starts_with("_pad"))
            .collect();
        assert_eq!(
            names,
            vec![
                field("n", std::mem::offset_of!(LbvhParams, n)),
                field("lo", std::mem::offset_of!(LbvhParams, lo)),
                field("scale", std::mem::offset_of!(LbvhParams, scale)),
            ]
        );
    }

    /// The kernels' word view of a record (`BinaryNodeWords`) has the layout of
    /// `BinaryNodeRecord`, in WGSL and on the host, and the word offsets the bounds kernel uses.
    #[test]
    fn node_words_have_the_layout_of_binary_node_records() {
        let words = shader::struct_layout("bvh/lbvh_hierarchy.wgsl", "BinaryNodeWords");
        let records = shader::struct_layout("bvh/lbvh_hierarchy.wgsl", "BinaryNodeRecord");
        assert_eq!(words, records);
        assert_eq!(words.0 as usize, std::mem::size_of::<BinaryNodeRecord>());
        let host = vec![
            field("lo", std::mem::offset_of!(BinaryNodeRecord, lo)),
            field("left", std::mem::offset_of!(BinaryNodeRecord, left)),
            field("hi", std::mem::offset_of!(BinaryNodeRecord, hi)),
            field("right", std::mem::offset_of!(BinaryNodeRecord, right)),
            field("first", std::mem::offset_of!(BinaryNodeRecord, first)),
            field("count", std::mem::offset_of!(BinaryNodeRecord, count)),
            field("parent", std::mem::offset_of!(BinaryNodeRecord, parent)),
            field("_pad", std::mem::offset_of!(BinaryNodeRecord, _pad)),
        ];
        assert_eq!(words.1, host);
        let source = shader::assemble("bvh/lbvh_bounds.wgsl", &[]).expect("assembles");
        for (name, offset) in &host[..7] {
            let constant = format!("const WORD_{}: u32 = {}u;", name.to_uppercase(), offset / 4);
            assert!(source.contains(&constant), "{constant}");
        }
        assert!(source.contains(&format!(
            "const NODE_WORDS: u32 = {}u;",
            std::mem::size_of::<BinaryNodeRecord>() / 4
        )));
    }
}
