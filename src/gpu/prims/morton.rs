//! Morton order of points: the indices `0..n` sorted by the 30-bit Morton code of point
//! `points[i · stride]` in a cube (a Z-order curve through it), so that queries taken in that
//! order walk space coherently. Codes from `prims/morton_codes.wgsl`, then the radix sort; the
//! CPU twin is `cpu::prims::morton_order`.

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use super::*;
use crate::gpu::encoder::Encoder;
use crate::gpu::pool::GpuBuffer;

/// The parameters of `prims/morton_codes.wgsl` (its `MortonParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct MortonParams {
    pub n: u32,
    pub stride: u32,
    pub _pad: [u32; 2],
    /// xyz: the cube's low corner.
    pub lo: [f32; 4],
    /// x: cells per unit length (1024 cells an axis).
    pub scale: [f32; 4],
}

impl Primitives {
    /// Records the Morton order of the `n` points `points[i · stride]` (`array<vec4<f32>>`,
    /// xyz) in `cube` (low corner, side; points outside it are clamped to its faces): a buffer
    /// of the indices `0..n`, ordered by code and then by index.
    pub fn morton_order(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        points: &GpuBuffer,
        stride: u32,
        n: u32,
        (lo, side): (Vec3, f32),
    ) -> Result<GpuBuffer, GpuError> {
        let keys = scratch_u32(ctx, "Morton codes", n.max(1) as u64)?;
        let order = scratch_u32(ctx, "Morton order", n.max(1) as u64)?;
        if n == 0 {
            return Ok(order);
        }
        let last = (n as u64 - 1) * stride.max(1) as u64;
        if (last + 1) * 16 > points.size() {
            return Err(GpuError::Device(format!(
                "Morton order: point {last} is beyond the {} bytes of the points",
                points.size()
            )));
        }
        let params = uniform_buffer(
            ctx,
            "Morton params",
            &MortonParams {
                n,
                stride,
                lo: [lo.x, lo.y, lo.z, 0.0],
                scale: [crate::accel::knn::morton_scale(side), 0.0, 0.0, 0.0],
                ..Default::default()
            },
        );
        let bind = self.morton_codes.bind(
            ctx,
            &[
                ("params", &params),
                ("points", points),
                ("keys", &keys),
                ("values", &order),
            ],
        )?;
        self.morton_codes
            .dispatch(encoder, &bind, elements_grid(ctx, n));
        self.radix_sort_u32(ctx, encoder, &keys, &order, n, 30)?;
        Ok(order)
    }

    /// Uploads `points`, orders the `n` points `points[i · stride]` on the GPU and reads the
    /// order back.
    pub fn morton_order_vec(
        &self,
        ctx: &GpuContext,
        points: &[[f32; 4]],
        stride: u32,
        n: u32,
        cube: (Vec3, f32),
    ) -> Result<Vec<u32>, GpuError> {
        let buffer = upload(ctx, "Morton points", points)?;
        let mut encoder = new_encoder(ctx);
        let order = self.morton_order(ctx, &mut encoder, &buffer, stride, n, cube)?;
        ctx.submit([encoder.finish()]);
        read_buffer(ctx, &order, n as usize)
    }
}
