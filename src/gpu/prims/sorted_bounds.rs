//! "Find sorted bounds": for an array of sorted keys, every run of equal keys as a job
//! (key, start, end), ready for a later kernel to process one run per invocation (the VD batches
//! and the kd-tree builder consume it). Keys are `u32`, or `u64` held as two `u32` arrays.

use super::*;
use crate::gpu::encoder::Encoder;
use crate::gpu::pool::GpuBuffer;

/// One run of equal keys: `keys[start..end]` all equal `key`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SortedRun {
    pub key: u64,
    pub start: u32,
    pub end: u32,
}

/// The GPU-resident runs, as parallel arrays with room for `n` runs each: run `r` has key
/// `keys_lo[r] | keys_hi[r] << 32`, and covers `starts[r]..ends[r]`.
pub struct SortedRuns {
    pub keys_lo: GpuBuffer,
    /// Written only for 64-bit keys.
    pub keys_hi: GpuBuffer,
    pub starts: GpuBuffer,
    pub ends: GpuBuffer,
    /// The number of runs, with indirect-dispatch arguments.
    pub count: CountBuffer,
}

impl Primitives {
    /// Records the search for runs of equal keys in `keys_lo[..n]` (and `keys_hi[..n]` when
    /// given: 64-bit keys). The keys must be sorted, or at least have equal keys adjacent.
    pub fn find_sorted_bounds(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        keys_lo: &GpuBuffer,
        keys_hi: Option<&GpuBuffer>,
        n: u32,
    ) -> Result<SortedRuns, GpuError> {
        self.sorted_bounds(ctx, encoder, keys_lo, keys_hi, n, None)
    }

    /// Records the search for runs of equal keys in the first `live` of `keys_lo[..capacity]`
    /// (`u32` keys), where `live` is the first word of a buffer the device fills, such as an
    /// earlier search's run count (at most `capacity`): nothing is read back. The kernels and
    /// the scan cover `capacity` elements.
    pub fn find_sorted_bounds_live(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        keys_lo: &GpuBuffer,
        capacity: u32,
        live: &GpuBuffer,
    ) -> Result<SortedRuns, GpuError> {
        self.sorted_bounds(ctx, encoder, keys_lo, None, capacity, Some(live))
    }

    fn sorted_bounds(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        keys_lo: &GpuBuffer,
        keys_hi: Option<&GpuBuffer>,
        n: u32,
        live: Option<&GpuBuffer>,
    ) -> Result<SortedRuns, GpuError> {
        check_elements(ctx, "sorted keys", keys_lo, n, 4)?;
        if let Some(hi) = keys_hi {
            check_elements(ctx, "sorted keys (high words)", hi, n, 4)?;
        }
        let hi_words = if keys_hi.is_some() { n as u64 } else { 1 };
        let runs = SortedRuns {
            keys_lo: scratch_u32(ctx, "run keys", n as u64)?,
            keys_hi: scratch_u32(ctx, "run keys (high words)", hi_words)?,
            starts: scratch_u32(ctx, "run starts", n as u64)?,
            ends: scratch_u32(ctx, "run ends", n as u64)?,
            count: CountBuffer::new(ctx, "run count"),
        };
        encoder.clear_buffer(&runs.count.buffer, 0, None);
        if n == 0 {
            return Ok(runs);
        }
        let no_hi;
        let hi = match keys_hi {
            Some(hi) => hi,
            None => {
                no_hi = scratch_u32(ctx, "no high key words", 1)?;
                &no_hi
            }
        };
        let mode = u32::from(keys_hi.is_some());
        let params = params_buffer(
            ctx,
            PrimParams {
                n,
                mode,
                ..Default::default()
            },
        );
        if let Some(live) = live {
            // The kernels' element count is the live one; the heads past it are zeros, so the
            // scan over all `n` numbers the live runs alone.
            let at = std::mem::offset_of!(PrimParams, n) as u64;
            encoder.copy_buffer_to_buffer(live, 0, &params, at, 4);
        }
        let heads = scratch_u32(ctx, "run heads", n as u64)?;
        let bind = self.run_heads.bind(
            ctx,
            &[
                ("params", &params),
                ("keys_lo", keys_lo),
                ("keys_hi", hi),
                ("heads", &heads),
            ],
        )?;
        self.run_heads
            .dispatch(encoder, &bind, elements_grid(ctx, n));
        let run_numbers = scratch_u32(ctx, "run numbers", n as u64)?;
        self.exclusive_scan(ctx, encoder, &heads, &run_numbers, n)?;
        let bind = self.sorted_runs.bind(
            ctx,
            &[
                ("params", &params),
                ("keys_lo", keys_lo),
                ("keys_hi", hi),
                ("run_numbers", &run_numbers),
                ("run_keys_lo", &runs.keys_lo),
                ("run_keys_hi", &runs.keys_hi),
                ("run_starts", &runs.starts),
                ("run_ends", &runs.ends),
                ("count", &runs.count.buffer),
            ],
        )?;
        self.sorted_runs
            .dispatch(encoder, &bind, elements_grid(ctx, n));
        Ok(runs)
    }

    /// Uploads sorted `u32` keys, finds their runs on the GPU and reads them back.
    pub fn find_sorted_bounds_u32_vec(
        &self,
        ctx: &GpuContext,
        keys: &[u32],
    ) -> Result<Vec<SortedRun>, GpuError> {
        let n = element_count("sorted keys", keys.len())?;
        let lo = upload(ctx, "sorted keys", keys)?;
        self.read_runs(ctx, &lo, None, n)
    }

    /// Uploads sorted `u64` keys (split into low and high words), finds their runs on the GPU
    /// and reads them back.
    pub fn find_sorted_bounds_u64_vec(
        &self,
        ctx: &GpuContext,
        keys: &[u64],
    ) -> Result<Vec<SortedRun>, GpuError> {
        let n = element_count("sorted keys", keys.len())?;
        let (lo, hi) = split_u64(keys);
        let lo = upload(ctx, "sorted keys", &lo)?;
        let hi = upload(ctx, "sorted keys (high words)", &hi)?;
        self.read_runs(ctx, &lo, Some(&hi), n)
    }

    fn read_runs(
        &self,
        ctx: &GpuContext,
        lo: &GpuBuffer,
        hi: Option<&GpuBuffer>,
        n: u32,
    ) -> Result<Vec<SortedRun>, GpuError> {
        let mut encoder = new_encoder(ctx);
        let runs = self.find_sorted_bounds(ctx, &mut encoder, lo, hi, n)?;
        ctx.submit([encoder.finish()]);
        let count = runs.count.read(ctx)? as usize;
        let keys_lo: Vec<u32> = read_buffer(ctx, &runs.keys_lo, count)?;
        let keys_hi: Vec<u32> = if hi.is_some() {
            read_buffer(ctx, &runs.keys_hi, count)?
        } else {
            vec![0; count]
        };
        let starts: Vec<u32> = read_buffer(ctx, &runs.starts, count)?;
        let ends: Vec<u32> = read_buffer(ctx, &runs.ends, count)?;
        Ok((0..count)
            .map(|r| SortedRun {
                key: keys_lo[r] as u64 | (keys_hi[r] as u64) << 32,
                start: starts[r],
                end: ends[r],
            })
            .collect())
    }
}

/// Splits 64-bit keys into their low and high 32-bit words.
pub fn split_u64(keys: &[u64]) -> (Vec<u32>, Vec<u32>) {
    keys.iter().map(|&k| (k as u32, (k >> 32) as u32)).unzip()
}
