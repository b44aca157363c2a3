//! Stream compaction: the values whose flag is nonzero, written densely in their original order
//! (an exclusive scan of the 0/1 flags gives each kept value its place), and their count, in one
//! pass (`prims/scan_chained.wgsl` compiled with `COMPACT`).

use super::*;
use crate::gpu::encoder::Encoder;
use crate::gpu::pool::GpuBuffer;

impl Primitives {
    /// Records the compaction of `values[i]` for `i < n` where `flags[i] != 0` into the front of
    /// `kept` (which needs room for `n`), returning the GPU-resident count.
    pub fn compact(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        values: &GpuBuffer,
        flags: &GpuBuffer,
        kept: &GpuBuffer,
        n: u32,
    ) -> Result<CountBuffer, GpuError> {
        check_elements(ctx, "compaction values", values, n, 4)?;
        check_elements(ctx, "compaction flags", flags, n, 4)?;
        check_elements(ctx, "compaction output", kept, n, 4)?;
        // Zeroed: it stays 0 when there is nothing to compact.
        let count = CountBuffer::new(ctx, "compaction count");
        if n == 0 {
            return Ok(count);
        }
        self.chained_pass(
            ctx,
            encoder,
            &self.compact_chained,
            n,
            MODE_NONZERO_AS_ONE,
            &[
                ("flags", flags),
                ("values", values),
                ("kept", kept),
                ("count", &count.buffer),
            ],
        )?;
        Ok(count)
    }

    /// Uploads `values` and `flags` (the same length), compacts on the GPU and reads back the
    /// kept values.
    pub fn compact_vec(
        &self,
        ctx: &GpuContext,
        values: &[u32],
        flags: &[u32],
    ) -> Result<Vec<u32>, GpuError> {
        if values.len() != flags.len() {
            return Err(GpuError::Device(format!(
                "compaction: {} values but {} flags",
                values.len(),
                flags.len()
            )));
        }
        let n = element_count("compaction values", values.len())?;
        let values = upload(ctx, "compaction values", values)?;
        let flags = upload(ctx, "compaction flags", flags)?;
        let kept = scratch_u32(ctx, "compaction output", n as u64)?;
        let mut encoder = new_encoder(ctx);
        let count = self.compact(ctx, &mut encoder, &values, &flags, &kept, n)?;
        ctx.submit([encoder.finish()]);
        let count = count.read(ctx)?;
        read_buffer(ctx, &kept, count as usize)
    }
}
