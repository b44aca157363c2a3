//! Exclusive and inclusive prefix sums of `u32` (wrapping add) in one pass over blocks of 1024:
//! each block adds the sum of the blocks before it, which it finds by walking back over the sums
//! they publish, or works out itself from their inputs rather than wait for them
//! (`prims/scan_chained.wgsl`).

use super::*;
use crate::gpu::encoder::Encoder;
use crate::gpu::pool::GpuBuffer;

impl Primitives {
    /// Records `output[i] = input[0] + … + input[i - 1]` (wrapping) for `i < n`.
    /// `input` and `output` must be different buffers.
    pub fn exclusive_scan(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        input: &GpuBuffer,
        output: &GpuBuffer,
        n: u32,
    ) -> Result<(), GpuError> {
        self.scan_with_mode(ctx, encoder, input, output, n, 0)
    }

    /// Records `output[i] = input[0] + … + input[i]` (wrapping) for `i < n`.
    /// `input` and `output` must be different buffers.
    pub fn inclusive_scan(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        input: &GpuBuffer,
        output: &GpuBuffer,
        n: u32,
    ) -> Result<(), GpuError> {
        self.scan_with_mode(ctx, encoder, input, output, n, MODE_INCLUSIVE)
    }

    /// Records a scan whose input is read as `mode` says (`MODE_*` bits).
    pub(crate) fn scan_with_mode(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        input: &GpuBuffer,
        output: &GpuBuffer,
        n: u32,
        mode: u32,
    ) -> Result<(), GpuError> {
        check_elements(ctx, "scan input", input, n, 4)?;
        check_elements(ctx, "scan output", output, n, 4)?;
        if n == 0 {
            return Ok(());
        }
        self.chained_pass(
            ctx,
            encoder,
            &self.scan_chained,
            n,
            mode,
            &[("input", input), ("output", output)],
        )
    }

    /// Records one pass of `prims/scan_chained.wgsl` (`kernel`: the scan or the compaction)
    /// over `n > 0` inputs read as `mode` says, with its parameters, the shared chain words
    /// and `buffers`.
    pub(crate) fn chained_pass(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        kernel: &Kernel,
        n: u32,
        mode: u32,
        buffers: &[(&str, &GpuBuffer)],
    ) -> Result<(), GpuError> {
        let num_blocks = n.div_ceil(BLOCK_SIZE);
        let params = params_buffer(
            ctx,
            PrimParams {
                n,
                mode,
                shift: 0,
                num_blocks,
            },
        );
        let chain = self.chain(ctx, num_blocks)?;
        let mut bindings = vec![("params", &params), ("chain", &chain)];
        bindings.extend_from_slice(buffers);
        let bind = kernel.bind(ctx, &bindings)?;
        kernel.dispatch(encoder, &bind, groups_grid(ctx, num_blocks as u64));
        Ok(())
    }

    /// Uploads `data`, scans it exclusively on the GPU and reads the result back.
    pub fn exclusive_scan_vec(&self, ctx: &GpuContext, data: &[u32]) -> Result<Vec<u32>, GpuError> {
        self.scan_vec(ctx, data, 0)
    }

    /// Uploads `data`, scans it inclusively on the GPU and reads the result back.
    pub fn inclusive_scan_vec(&self, ctx: &GpuContext, data: &[u32]) -> Result<Vec<u32>, GpuError> {
        self.scan_vec(ctx, data, MODE_INCLUSIVE)
    }

    fn scan_vec(&self, ctx: &GpuContext, data: &[u32], mode: u32) -> Result<Vec<u32>, GpuError> {
        let n = element_count("scan input", data.len())?;
        let input = upload(ctx, "scan input", data)?;
        let output = scratch_u32(ctx, "scan output", n as u64)?;
        let mut encoder = new_encoder(ctx);
        self.scan_with_mode(ctx, &mut encoder, &input, &output, n, mode)?;
        ctx.submit([encoder.finish()]);
        read_buffer(ctx, &output, n as usize)
    }
}
