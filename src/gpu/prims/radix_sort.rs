//! Stable LSD radix sort of key-value pairs on the GPU, 4 bits per pass: per-block digit
//! histograms, one exclusive scan of the digit-major histogram table, and a scatter that sorts
//! each block locally before writing. Keys are `u32`, or `u64` held as two `u32` arrays (low and
//! high words) so that 16M+ keys stay within one storage binding per array; values are `u32`.

use super::*;
use crate::gpu::encoder::Encoder;
use crate::gpu::pool::GpuBuffer;

/// Bits sorted per pass (`BITS_PER_PASS` in `prims/radix_scatter.wgsl`).
pub const RADIX_BITS: u32 = 4;
/// Digits per pass.
const RADIX: u64 = 1 << RADIX_BITS;

/// One array of key words (or values) and its ping-pong partner.
struct PingPong<'a> {
    original: &'a GpuBuffer,
    alternate: GpuBuffer,
}

impl PingPong<'_> {
    /// The buffer holding the current contents after `passes` passes, and the other one.
    fn current_and_next(&self, passes: u32) -> (&GpuBuffer, &GpuBuffer) {
        if passes % 2 == 0 {
            (self.original, &self.alternate)
        } else {
            (&self.alternate, self.original)
        }
    }
}

impl Primitives {
    /// Records a stable sort of `keys[..n]` with `values[..n]` by the low `key_bits` bits of the
    /// keys (1..=32; 0 sorts nothing), in place.
    pub fn radix_sort_u32(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        keys: &GpuBuffer,
        values: &GpuBuffer,
        n: u32,
        key_bits: u32,
    ) -> Result<(), GpuError> {
        if key_bits > 32 {
            return Err(GpuError::Device(format!(
                "radix sort of 32-bit keys by {key_bits} bits"
            )));
        }
        self.radix_sort(ctx, encoder, keys, None, values, n, key_bits)
    }

    /// Records a stable sort of the 64-bit keys `keys_lo[i] | keys_hi[i] << 32` (`i < n`) with
    /// `values[..n]` by their low `key_bits` bits (1..=64; 0 sorts nothing), in place.
    #[allow(clippy::too_many_arguments)]
    pub fn radix_sort_u64(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        keys_lo: &GpuBuffer,
        keys_hi: &GpuBuffer,
        values: &GpuBuffer,
        n: u32,
        key_bits: u32,
    ) -> Result<(), GpuError> {
        if key_bits > 64 {
            return Err(GpuError::Device(format!(
                "radix sort of 64-bit keys by {key_bits} bits"
            )));
        }
        self.radix_sort(ctx, encoder, keys_lo, Some(keys_hi), values, n, key_bits)
    }

    #[allow(clippy::too_many_arguments)]
    fn radix_sort(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        keys_lo: &GpuBuffer,
        keys_hi: Option<&GpuBuffer>,
        values: &GpuBuffer,
        n: u32,
        key_bits: u32,
    ) -> Result<(), GpuError> {
        check_elements(ctx, "radix sort keys", keys_lo, n, 4)?;
        if let Some(hi) = keys_hi {
            check_elements(ctx, "radix sort keys (high words)", hi, n, 4)?;
        }
        check_elements(ctx, "radix sort values", values, n, 4)?;
        let passes = key_bits.div_ceil(RADIX_BITS);
        if n <= 1 || passes == 0 {
            return Ok(());
        }
        let ping_pong = |label: &str, original| -> Result<PingPong, GpuError> {
            Ok(PingPong {
                original,
                alternate: scratch_u32(ctx, label, n as u64)?,
            })
        };
        let lo = ping_pong("radix sort keys (other half)", keys_lo)?;
        let hi = match keys_hi {
            Some(h) => Some(ping_pong("radix sort high words (other half)", h)?),
            None => None,
        };
        let vals = ping_pong("radix sort values (other half)", values)?;
        let num_blocks = n.div_ceil(BLOCK_SIZE);
        let table = RADIX * num_blocks as u64;
        let hist = scratch_u32(ctx, "radix histograms", table)?;
        let digit_offsets = scratch_u32(ctx, "radix digit offsets", table)?;
        let no_extra_in = scratch_u32(ctx, "no extra words in", 1)?;
        let no_extra_out = scratch_u32(ctx, "no extra words out", 1)?;
        for pass in 0..passes {
            let word = pass * RADIX_BITS / 32;
            let shift = pass * RADIX_BITS % 32;
            let (lo_in, lo_out) = lo.current_and_next(pass);
            let (values_in, values_out) = vals.current_and_next(pass);
            // The word holding this pass's digit is the key; the other word rides along.
            let (keys_in, keys_out, extra_in, extra_out) = match (&hi, word) {
                (None, _) => (lo_in, lo_out, &no_extra_in, &no_extra_out),
                (Some(hi), 0) => {
                    let (hi_in, hi_out) = hi.current_and_next(pass);
                    (lo_in, lo_out, hi_in, hi_out)
                }
                (Some(hi), _) => {
                    let (hi_in, hi_out) = hi.current_and_next(pass);
                    (hi_in, hi_out, lo_in, lo_out)
                }
            };
            // Bit 0: move the other key word; bits 8..: this pass's digit width.
            let digit_bits = RADIX_BITS.min(key_bits - pass * RADIX_BITS);
            let mode = u32::from(hi.is_some()) | digit_bits << 8;
            let params = params_buffer(
                ctx,
                PrimParams {
                    n,
                    mode,
                    shift,
                    num_blocks,
                },
            );
            let bind = self.radix_histogram.bind(
                ctx,
                &[("params", &params), ("keys", keys_in), ("hist", &hist)],
            )?;
            self.radix_histogram
                .dispatch(encoder, &bind, groups_grid(ctx, num_blocks as u64));
            self.exclusive_scan(ctx, encoder, &hist, &digit_offsets, table as u32)?;
            let bind = self.radix_scatter.bind(
                ctx,
                &[
                    ("params", &params),
                    ("keys_in", keys_in),
                    ("values_in", values_in),
                    ("extra_in", extra_in),
                    ("digit_offsets", &digit_offsets),
                    ("keys_out", keys_out),
                    ("values_out", values_out),
                    ("extra_out", extra_out),
                ],
            )?;
            self.radix_scatter
                .dispatch(encoder, &bind, groups_grid(ctx, num_blocks as u64));
        }
        if passes % 2 == 1 {
            let bytes = n as u64 * 4;
            encoder.copy_buffer_to_buffer(&lo.alternate, 0, keys_lo, 0, bytes);
            if let (Some(hi), Some(keys_hi)) = (&hi, keys_hi) {
                encoder.copy_buffer_to_buffer(&hi.alternate, 0, keys_hi, 0, bytes);
            }
            encoder.copy_buffer_to_buffer(&vals.alternate, 0, values, 0, bytes);
        }
        Ok(())
    }

    /// Uploads `keys` and `values` (the same length), sorts them on the GPU by the low
    /// `key_bits` bits of the keys and reads both back.
    pub fn radix_sort_u32_vec(
        &self,
        ctx: &GpuContext,
        keys: &[u32],
        values: &[u32],
        key_bits: u32,
    ) -> Result<(Vec<u32>, Vec<u32>), GpuError> {
        let n = pair_count(keys.len(), values.len())?;
        let keys = upload(ctx, "radix sort keys", keys)?;
        let values = upload(ctx, "radix sort values", values)?;
        let mut encoder = new_encoder(ctx);
        self.radix_sort_u32(ctx, &mut encoder, &keys, &values, n, key_bits)?;
        ctx.submit([encoder.finish()]);
        Ok((
            read_buffer(ctx, &keys, n as usize)?,
            read_buffer(ctx, &values, n as usize)?,
        ))
    }

    /// Uploads 64-bit `keys` (as low and high words) and `values`, sorts them on the GPU by the
    /// low `key_bits` bits of the keys and reads both back.
    pub fn radix_sort_u64_vec(
        &self,
        ctx: &GpuContext,
        keys: &[u64],
        values: &[u32],
        key_bits: u32,
    ) -> Result<(Vec<u64>, Vec<u32>), GpuError> {
        let n = pair_count(keys.len(), values.len())?;
        let (lo, hi) = sorted_bounds::split_u64(keys);
        let lo = upload(ctx, "radix sort keys", &lo)?;
        let hi = upload(ctx, "radix sort keys (high words)", &hi)?;
        let values = upload(ctx, "radix sort values", values)?;
        let mut encoder = new_encoder(ctx);
        self.radix_sort_u64(ctx, &mut encoder, &lo, &hi, &values, n, key_bits)?;
        ctx.submit([encoder.finish()]);
        let lo: Vec<u32> = read_buffer(ctx, &lo, n as usize)?;
        let hi: Vec<u32> = read_buffer(ctx, &hi, n as usize)?;
        let keys = lo
            .iter()
            .zip(&hi)
            .map(|(&l, &h)| l as u64 | (h as u64) << 32)
            .collect();
        Ok((keys, read_buffer(ctx, &values, n as usize)?))
    }
}

fn pair_count(keys: usize, values: usize) -> Result<u32, GpuError> {
    if keys != values {
        return Err(GpuError::Device(format!(
            "radix sort: {keys} keys but {values} values"
        )));
    }
    element_count("radix sort keys", keys)
}
