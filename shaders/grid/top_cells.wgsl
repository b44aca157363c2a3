// Two-level grid, step 3: for top cell c, its leaf resolution from the references it holds
// (GridParams::leaf_resolution: along each axis one plus the thresholds the count reaches, by
// binary search in the non-decreasing row; 0 for an empty cell), packed as rx | ry << 8 |
// rz << 16, and its number of leaves, added to the exact total (their exclusive scan is each
// cell's first leaf).
//!include "grid/total.wgsl"

@group(0) @binding(0) var<uniform> params: GridBuildParams;
// thresholds[a * THRESHOLDS_PER_AXIS + m - 2]: GridParams::thresholds.
@group(0) @binding(1) var<storage, read> thresholds: array<u32>;
@group(0) @binding(2) var<storage, read> cell_counts: array<u32>;
@group(0) @binding(3) var<storage, read_write> packed: array<u32>;
@group(0) @binding(4) var<storage, read_write> leaf_counts: array<u32>;

// The number of thresholds of axis `a` at most n (slice::partition_point of t <= n).
fn reached(a: u32, n: u32) -> u32 {
    var lo = 0u;
    var hi = THRESHOLDS_PER_AXIS;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if thresholds[a * THRESHOLDS_PER_AXIS + mid] <= n {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

@compute @workgroup_size(GRID_WG_SIZE)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let c = grid_index(gid, nwg);
    var leaves = 0u;
    if c < params.res.w {
        let n = cell_counts[c];
        var r = vec3<u32>(0u);
        if n > 0u {
            r = vec3<u32>(1u + reached(0u, n), 1u + reached(1u, n), 1u + reached(2u, n));
        }
        leaves = r.x * r.y * r.z;
        packed[c] = r.x | (r.y << 8u) | (r.z << 16u);
        leaf_counts[c] = leaves;
    }
    add_to_total(leaves, lid);
}
