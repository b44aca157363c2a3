// Two-level grid, step 4 (writing): for sorted top pair j < top_pairs, its (leaf, primitive)
// pairs from offsets[j] on (the exclusive scan of the counts), x fastest, each leaf keyed by its
// place in the one leaf array: its top cell's first leaf + jx + rx * (jy + ry * jz).
//!include "grid/common.wgsl"

@group(0) @binding(0) var<uniform> params: GridBuildParams;
@group(0) @binding(1) var<storage, read> grid_boxes: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> cells: array<u32>;
@group(0) @binding(3) var<storage, read> prims: array<u32>;
@group(0) @binding(4) var<storage, read> packed: array<u32>;
@group(0) @binding(5) var<storage, read> first_leaf: array<u32>;
@group(0) @binding(6) var<storage, read> offsets: array<u32>;
@group(0) @binding(7) var<storage, read_write> leaf_keys: array<u32>;
@group(0) @binding(8) var<storage, read_write> leaf_prims: array<u32>;

@compute @workgroup_size(GRID_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = grid_index(gid, nwg);
    if j >= params.top_pairs {
        return;
    }
    let cell = cells[j];
    let prim = prims[j];
    let c = top_coords(cell, params.res.xyz);
    let r = unpack_resolution(packed[cell]);
    let lo = bitcast<vec3<f32>>(grid_boxes[2u * prim].xyz);
    let hi = bitcast<vec3<f32>>(grid_boxes[2u * prim + 1u].xyz);
    let first = leaf_first(lo, c, r);
    let last = leaf_last(hi, c, r);
    let base = first_leaf[cell];
    var k = offsets[j];
    for (var z = first.z; z <= last.z; z++) {
        for (var y = first.y; y <= last.y; y++) {
            for (var x = first.x; x <= last.x; x++) {
                leaf_keys[k] = base + x + r.x * (y + r.y * z);
                leaf_prims[k] = prim;
                k++;
            }
        }
    }
}
