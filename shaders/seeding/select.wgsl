// Adaptive seeding, step 7 (paper 003 listing 6.11), one invocation per seed (so that a leaf with
// many seeds is not one long loop): the seed's leaf from the scan of the leaves' seed counts, and
// its point by jittered strata (cpu::gather::stratum_pick) with the leaf's random stream at the
// seed's dimension, as the CPU twin draws them one after another.
//!include "seeding/common.wgsl"
//!include "shared/rng.wgsl"

// cpu::gather::SEED_STREAM_TAG (a test compares them).
const SEED_STREAM_TAG: u32 = 0x80000010u;

@group(0) @binding(0) var<uniform> params: SeedParams;
@group(0) @binding(1) var<storage, read> node_range: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> order: array<u32>;
// Per leaf: its seeds, and their exclusive scan.
@group(0) @binding(3) var<storage, read> leaf_seeds: array<u32>;
@group(0) @binding(4) var<storage, read> leaf_offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> seeds: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = seed_index(gid, nwg);
    if t >= params.count {
        return;
    }
    // The last leaf whose first seed is at or before t (leaves without seeds share the offset of
    // the next one, which comes later).
    var lo = 0u;
    var hi = params.leaves;
    while hi - lo > 1u {
        let mid = (lo + hi) / 2u;
        if leaf_offsets[mid] <= t {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let j = t - leaf_offsets[lo];
    let range = node_range[params.child_offset + lo];
    var stream = sample_stream(params.seed_lo, params.seed_hi, range.x, SEED_STREAM_TAG);
    stream.dimension = j;
    let u24 = u32(next_f32(&stream) * 16777216.0);
    let k = stratum_pick(j, leaf_seeds[lo], range.y - range.x, u24);
    seeds[t] = order[range.x + k];
}
