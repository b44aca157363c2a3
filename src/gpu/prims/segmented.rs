//! Segmented scan and segmented reduce of `u32` (wrapping add) over segments given by head flags
//! (a nonzero flag starts a segment; element 0 always does). Both are built from whole-array
//! scans: the segment numbers are the inclusive scan of the heads, and a segment's running sum
//! is the exclusive scan of the values minus its value at the segment's start, which is exact in
//! wrapping arithmetic.

use super::*;
use crate::gpu::encoder::Encoder;
use crate::gpu::pool::GpuBuffer;

/// The GPU-resident result of a segmented reduce.
pub struct SegmentedReduction {
    /// One sum per segment, in segment order (room for `n`).
    pub sums: GpuBuffer,
    /// The first element of each segment (room for `n`).
    pub starts: GpuBuffer,
    /// The number of segments, with indirect-dispatch arguments.
    pub count: CountBuffer,
}

/// What the segmented steps share: segment numbers (+1), starts, exclusive prefix, count.
struct SegmentScaffold {
    segment_numbers: GpuBuffer,
    starts: GpuBuffer,
    prefix: GpuBuffer,
    count: CountBuffer,
}

impl Primitives {
    fn segment_scaffold(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        values: &GpuBuffer,
        head_flags: &GpuBuffer,
        n: u32,
    ) -> Result<SegmentScaffold, GpuError> {
        check_elements(ctx, "segmented values", values, n, 4)?;
        check_elements(ctx, "segment head flags", head_flags, n, 4)?;
        let segment_numbers = scratch_u32(ctx, "segment numbers", n as u64)?;
        let starts = scratch_u32(ctx, "segment starts", n as u64)?;
        let prefix = scratch_u32(ctx, "segmented prefix", n as u64)?;
        let count = CountBuffer::new(ctx, "segment count");
        encoder.clear_buffer(&count.buffer, 0, None);
        if n == 0 {
            return Ok(SegmentScaffold {
                segment_numbers,
                starts,
                prefix,
                count,
            });
        }
        self.scan_with_mode(
            ctx,
            encoder,
            head_flags,
            &segment_numbers,
            n,
            MODE_INCLUSIVE | MODE_NONZERO_AS_ONE | MODE_FIRST_AS_ONE,
        )?;
        self.exclusive_scan(ctx, encoder, values, &prefix, n)?;
        let params = params_buffer(
            ctx,
            PrimParams {
                n,
                ..Default::default()
            },
        );
        let bind = self.segment_starts.bind(
            ctx,
            &[
                ("params", &params),
                ("head_flags", head_flags),
                ("segment_numbers", &segment_numbers),
                ("segment_starts", &starts),
                ("count", &count.buffer),
            ],
        )?;
        self.segment_starts
            .dispatch(encoder, &bind, elements_grid(ctx, n));
        Ok(SegmentScaffold {
            segment_numbers,
            starts,
            prefix,
            count,
        })
    }

    /// Records the segmented scan of `values` (exclusive, or inclusive when `inclusive`) into
    /// `output`; segments start where `head_flags` is nonzero and at element 0.
    #[allow(clippy::too_many_arguments)]
    pub fn segmented_scan(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        values: &GpuBuffer,
        head_flags: &GpuBuffer,
        output: &GpuBuffer,
        n: u32,
        inclusive: bool,
    ) -> Result<(), GpuError> {
        check_elements(ctx, "segmented scan output", output, n, 4)?;
        let scaffold = self.segment_scaffold(ctx, encoder, values, head_flags, n)?;
        if n == 0 {
            return Ok(());
        }
        let mode = if inclusive { MODE_INCLUSIVE } else { 0 };
        let params = params_buffer(
            ctx,
            PrimParams {
                n,
                mode,
                ..Default::default()
            },
        );
        let bind = self.segmented_scan_finish.bind(
            ctx,
            &[
                ("params", &params),
                ("values", values),
                ("prefix", &scaffold.prefix),
                ("segment_numbers", &scaffold.segment_numbers),
                ("segment_starts", &scaffold.starts),
                ("output", output),
            ],
        )?;
        self.segmented_scan_finish
            .dispatch(encoder, &bind, elements_grid(ctx, n));
        Ok(())
    }

    /// Records the sum of every segment of `values`; segments start where `head_flags` is
    /// nonzero and at element 0. The finishing kernel is dispatched for `n` segments (the upper
    /// bound) and reads the true count on the GPU.
    pub fn segmented_reduce(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        values: &GpuBuffer,
        head_flags: &GpuBuffer,
        n: u32,
    ) -> Result<SegmentedReduction, GpuError> {
        let scaffold = self.segment_scaffold(ctx, encoder, values, head_flags, n)?;
        let sums = scratch_u32(ctx, "segment sums", n as u64)?;
        if n > 0 {
            let params = params_buffer(
                ctx,
                PrimParams {
                    n,
                    ..Default::default()
                },
            );
            let bind = self.segmented_reduce_finish.bind(
                ctx,
                &[
                    ("params", &params),
                    ("values", values),
                    ("prefix", &scaffold.prefix),
                    ("segment_starts", &scaffold.starts),
                    ("count", &scaffold.count.buffer),
                    ("sums", &sums),
                ],
            )?;
            self.segmented_reduce_finish
                .dispatch(encoder, &bind, elements_grid(ctx, n));
        }
        Ok(SegmentedReduction {
            sums,
            starts: scaffold.starts,
            count: scaffold.count,
        })
    }

    /// Uploads, runs a segmented scan on the GPU and reads the result back.
    pub fn segmented_scan_vec(
        &self,
        ctx: &GpuContext,
        values: &[u32],
        head_flags: &[u32],
        inclusive: bool,
    ) -> Result<Vec<u32>, GpuError> {
        let n = same_length("segmented scan", values, head_flags)?;
        let values = upload(ctx, "segmented values", values)?;
        let flags = upload(ctx, "segment head flags", head_flags)?;
        let output = scratch_u32(ctx, "segmented scan output", n as u64)?;
        let mut encoder = new_encoder(ctx);
        self.segmented_scan(ctx, &mut encoder, &values, &flags, &output, n, inclusive)?;
        ctx.submit([encoder.finish()]);
        read_buffer(ctx, &output, n as usize)
    }

    /// Uploads, runs a segmented reduce on the GPU and reads back one sum per segment.
    pub fn segmented_reduce_vec(
        &self,
        ctx: &GpuContext,
        values: &[u32],
        head_flags: &[u32],
    ) -> Result<Vec<u32>, GpuError> {
        let n = same_length("segmented reduce", values, head_flags)?;
        let values = upload(ctx, "segmented values", values)?;
        let flags = upload(ctx, "segment head flags", head_flags)?;
        let mut encoder = new_encoder(ctx);
        let reduction = self.segmented_reduce(ctx, &mut encoder, &values, &flags, n)?;
        ctx.submit([encoder.finish()]);
        let count = reduction.count.read(ctx)?;
        read_buffer(ctx, &reduction.sums, count as usize)
    }
}

fn same_length(what: &str, values: &[u32], flags: &[u32]) -> Result<u32, GpuError> {
    if values.len() != flags.len() {
        return Err(GpuError::Device(format!(
            "{what}: {} values but {} head flags",
            values.len(),
            flags.len()
        )));
    }
    element_count(what, values.len())
}
