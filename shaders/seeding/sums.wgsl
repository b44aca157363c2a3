// Adaptive seeding, steps 2-3 (paper 003 listings 6.6 and 6.8): every node's sums of position
// and normal keys, on levels 1..=levels (the root's mean is never needed). An invocation walks
// CHUNK consecutive sorted points level by level, adds up a node's points in registers and
// flushes each node it leaves with 64-bit atomic additions (two u32 atomics and a carry): integer
// sums, so the order of the atomics does not change them.
//!include "seeding/common.wgsl"
//!include "seeding/nodes.wgsl"

@group(0) @binding(0) var<uniform> params: SeedParams;
@group(0) @binding(1) var<storage, read> sorted_points: array<SeedPoint>;
// Per node 12 words: position x, y, z then normal x, y, z sums, each (low, high).
@group(0) @binding(2) var<storage, read_write> node_sums: array<atomic<u32>>;

fn atomic_add64(word: u32, v: vec2<u32>) {
    if v.x != 0u {
        let old = atomicAdd(&node_sums[word], v.x);
        let carry = select(0u, 1u, old + v.x < old);
        if v.y + carry != 0u {
            atomicAdd(&node_sums[word + 1u], v.y + carry);
        }
    } else if v.y != 0u {
        atomicAdd(&node_sums[word + 1u], v.y);
    }
}

fn flush(node: u32, acc: array<vec2<u32>, 6>) {
    for (var c = 0u; c < 6u; c++) {
        atomic_add64(node * 12u + 2u * c, acc[c]);
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
        var acc: array<vec2<u32>, 6>;
        for (var k = first; k < last; k++) {
            if k >= end {
                flush(node, acc);
                acc = array<vec2<u32>, 6>();
                node = node + 1u;
                end = node_range[node].y;
            }
            let p = sorted_points[k];
            for (var a = 0u; a < 3u; a++) {
                acc[a] = add64(acc[a], vec2<u32>(p.position[a], 0u));
                acc[3u + a] = add64(acc[3u + a], from_i32(p.normal[a]));
            }
        }
        flush(node, acc);
    }
}
