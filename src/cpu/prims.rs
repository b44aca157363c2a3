//! Plain CPU twins of the GPU data-parallel primitives (`crate::gpu::prims`): the meaning of each
//! primitive, written for clarity, against which the GPU results are compared.

use crate::accel::knn::{morton_code, morton_scale};

/// `out[i] = data[0] + … + data[i - 1]`, wrapping.
pub fn exclusive_scan(data: &[u32]) -> Vec<u32> {
    let mut sum = 0u32;
    data.iter()
        .map(|&v| {
            let before = sum;
            sum = sum.wrapping_add(v);
            before
        })
        .collect()
}

/// `out[i] = data[0] + … + data[i]`, wrapping.
pub fn inclusive_scan(data: &[u32]) -> Vec<u32> {
    let mut sum = 0u32;
    data.iter()
        .map(|&v| {
            sum = sum.wrapping_add(v);
            sum
        })
        .collect()
}

/// The values whose flag is nonzero, in their original order.
pub fn compact(values: &[u32], flags: &[u32]) -> Vec<u32> {
    values
        .iter()
        .zip(flags)
        .filter(|(_, &f)| f != 0)
        .map(|(&v, _)| v)
        .collect()
}

/// The segments of `len` elements given by head flags: a nonzero flag starts a segment, and
/// element 0 always does. Returns each segment's index range.
pub fn segments(head_flags: &[u32]) -> Vec<std::ops::Range<usize>> {
    let mut starts: Vec<usize> = (0..head_flags.len())
        .filter(|&i| i == 0 || head_flags[i] != 0)
        .collect();
    starts.push(head_flags.len());
    starts.windows(2).map(|w| w[0]..w[1]).collect()
}

/// The scan of each segment on its own (exclusive, or inclusive when `inclusive`), wrapping.
pub fn segmented_scan(values: &[u32], head_flags: &[u32], inclusive: bool) -> Vec<u32> {
    let mut out = Vec::with_capacity(values.len());
    for segment in segments(head_flags) {
        let part = &values[segment];
        out.extend(if inclusive {
            inclusive_scan(part)
        } else {
            exclusive_scan(part)
        });
    }
    out
}

/// The wrapping sum of each segment, one per segment.
pub fn segmented_reduce(values: &[u32], head_flags: &[u32]) -> Vec<u32> {
    segments(head_flags)
        .into_iter()
        .map(|segment| values[segment].iter().fold(0u32, |a, &v| a.wrapping_add(v)))
        .collect()
}

/// The mask of the low `key_bits` bits of a 64-bit key.
fn low_bits_mask(key_bits: u32) -> u64 {
    if key_bits >= 64 {
        u64::MAX
    } else {
        (1u64 << key_bits) - 1
    }
}

/// Key-value pairs sorted stably by the low `key_bits` bits of the keys (std's stable sort).
pub fn sort_pairs_u32(keys: &[u32], values: &[u32], key_bits: u32) -> (Vec<u32>, Vec<u32>) {
    let mask = low_bits_mask(key_bits) as u32;
    let mut pairs: Vec<(u32, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    pairs.sort_by_key(|&(k, _)| k & mask);
    pairs.into_iter().unzip()
}

/// Key-value pairs with 64-bit keys sorted stably by the low `key_bits` bits of the keys.
pub fn sort_pairs_u64(keys: &[u64], values: &[u32], key_bits: u32) -> (Vec<u64>, Vec<u32>) {
    let mask = low_bits_mask(key_bits);
    let mut pairs: Vec<(u64, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    pairs.sort_by_key(|&(k, _)| k & mask);
    pairs.into_iter().unzip()
}

/// Every run of equal adjacent keys as (key, start, end): `keys[start..end]` all equal `key`.
pub fn find_sorted_bounds<K: Copy + PartialEq + Into<u64>>(keys: &[K]) -> Vec<(u64, u32, u32)> {
    let mut runs: Vec<(u64, u32, u32)> = Vec::new();
    for (i, &key) in keys.iter().enumerate() {
        match runs.last_mut() {
            Some(run) if keys[run.1 as usize] == key => run.2 = i as u32 + 1,
            _ => runs.push((key.into(), i as u32, i as u32 + 1)),
        }
    }
    runs
}

/// The indices `0..n` ordered by the Morton code of point `points[i · stride]` in the cube of
/// side `side` at `lo`, then by index.
pub fn morton_order(
    points: &[[f32; 4]],
    stride: usize,
    n: usize,
    lo: [f32; 3],
    side: f32,
) -> Vec<u32> {
    let scale = morton_scale(side);
    let keys: Vec<u32> = (0..n)
        .map(|i| morton_code(points[i * stride.max(1)], lo, scale))
        .collect();
    let values: Vec<u32> = (0..n as u32).collect();
    sort_pairs_u32(&keys, &values, 30).1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked examples of paper 003, figure 3.3: scans and segmented scans of
    /// [3, 7, 5, 4, 9, 2, 5, 3] with segments starting at 0 and 5.
    #[test]
    fn scans_reproduce_the_papers_worked_example() {
        let data = [3, 7, 5, 4, 9, 2, 5, 3];
        assert_eq!(exclusive_scan(&data), [0, 3, 10, 15, 19, 28, 30, 35]);
        assert_eq!(inclusive_scan(&data), [3, 10, 15, 19, 28, 30, 35, 38]);
        let heads = [1, 0, 0, 0, 0, 1, 0, 0];
        assert_eq!(
            segmented_scan(&data, &heads, false),
            [0, 3, 10, 15, 19, 0, 2, 7]
        );
        assert_eq!(
            segmented_scan(&data, &heads, true),
            [3, 10, 15, 19, 28, 2, 7, 10]
        );
        assert_eq!(segmented_reduce(&data, &heads), [28, 10]);
    }

    #[test]
    fn element_zero_starts_a_segment_without_a_flag() {
        assert_eq!(segmented_reduce(&[1, 2, 3], &[0, 0, 5]), [3, 3]);
        assert!(segmented_reduce(&[], &[]).is_empty());
    }

    #[test]
    fn compaction_keeps_flagged_values_in_order() {
        assert_eq!(compact(&[10, 11, 12, 13], &[0, 7, 0, 1]), [11, 13]);
    }

    #[test]
    fn sorting_by_low_bits_keeps_equal_low_bits_in_input_order() {
        let (keys, values) = sort_pairs_u32(&[0x13, 0x02, 0x23, 0x01], &[0, 1, 2, 3], 4);
        assert_eq!(keys, [0x01, 0x02, 0x13, 0x23]);
        assert_eq!(values, [3, 1, 0, 2]);
    }

    #[test]
    fn sorted_bounds_give_each_run_of_equal_keys() {
        let runs = find_sorted_bounds(&[4u32, 4, 7, 9, 9, 9]);
        assert_eq!(runs, [(4, 0, 2), (7, 2, 3), (9, 3, 6)]);
    }
}
