// Adaptive seeding, the node means (one invocation per node below the root): the mean position
// key is the floor of the sum over the point count, the mean normal key the sum's direction
// (cpu::gather::seed_mean_normal).
//!include "seeding/common.wgsl"

@group(0) @binding(0) var<uniform> params: SeedParams;
@group(0) @binding(1) var<storage, read> node_range: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> node_sums: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> node_means: array<SeedPoint>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = seed_index(gid, nwg);
    if j >= params.count {
        return;
    }
    let g = params.offset + j;
    let range = node_range[g];
    let count = range.y - range.x;
    let base = g * 6u;
    // Position keys are at most 2^31, so the quotient fits 32 bits.
    let position = vec3<u32>(
        div64(node_sums[base], count).x,
        div64(node_sums[base + 1u], count).x,
        div64(node_sums[base + 2u], count).x,
    );
    let normal = seed_mean_normal(node_sums[base + 3u], node_sums[base + 4u], node_sums[base + 5u]);
    node_means[g] = SeedPoint(position, 0u, normal, 0u);
}
