// Adaptive seeding, steps 4-5 (paper 003 listing 6.9): every node's error, the sum of its points'
// geometric variation against its mean (cpu::gather::seed_variation), on levels 1..=levels. The
// same walk as sums.wgsl: CHUNK sorted points per invocation, level by level, a register sum per
// node flushed with a 64-bit atomic addition.
//!include "seeding/common.wgsl"
//!include "seeding/nodes.wgsl"

@group(0) @binding(0) var<uniform> params: SeedParams;
@group(0) @binding(1) var<storage, read> sorted_points: array<SeedPoint>;
@group(0) @binding(2) var<storage, read> node_means: array<SeedPoint>;
// Per node: (low, high) of the error sum.
@group(0) @binding(3) var<storage, read_write> node_errors: array<atomic<u32>>;

fn flush(node: u32, acc: vec2<u32>) {
    if acc.x != 0u {
        let old = atomicAdd(&node_errors[2u * node], acc.x);
        let carry = select(0u, 1u, old + acc.x < old);
        if acc.y + carry != 0u {
            atomicAdd(&node_errors[2u * node + 1u], acc.y + carry);
        }
    } else if acc.y != 0u {
        atomicAdd(&node_errors[2u * node + 1u], acc.y);
    }
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let first = seed_index(gid, nwg) * CHUNK;
    if first >= params.n {
        return;
    }
    let last = min(first + CHUNK, params.n);
    for (var level = 1u; level <= params.levels; level++) {
        var node = find_node(level, first);
        var end = node_range[node].y;
        var mean = node_means[node];
        var acc = vec2<u32>(0u, 0u);
        for (var k = first; k < last; k++) {
            if k >= end {
                flush(node, acc);
                acc = vec2<u32>(0u, 0u);
                node = node + 1u;
                end = node_range[node].y;
                mean = node_means[node];
            }
            acc = add64(acc, vec2<u32>(seed_variation(sorted_points[k], mean), 0u));
        }
        flush(node, acc);
    }
}
