// Two-level grid, step 4 (counting): for sorted top pair j < top_pairs, the number of leaves
// of its top cell that its primitive's grid box overlaps (the volume of
// caustica::accel::grid::leaf_range), added to the exact total.
//!include "grid/total.wgsl"

@group(0) @binding(0) var<uniform> params: GridBuildParams;
@group(0) @binding(1) var<storage, read> grid_boxes: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> cells: array<u32>;
@group(0) @binding(3) var<storage, read> prims: array<u32>;
@group(0) @binding(4) var<storage, read> packed: array<u32>;
@group(0) @binding(5) var<storage, read_write> counts: array<u32>;

@compute @workgroup_size(GRID_WG_SIZE)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let j = grid_index(gid, nwg);
    var count = 0u;
    if j < params.top_pairs {
        let cell = cells[j];
        let prim = prims[j];
        let c = top_coords(cell, params.res.xyz);
        let r = unpack_resolution(packed[cell]);
        let lo = bitcast<vec3<f32>>(grid_boxes[2u * prim].xyz);
        let hi = bitcast<vec3<f32>>(grid_boxes[2u * prim + 1u].xyz);
        count = range_volume(leaf_first(lo, c, r), leaf_last(hi, c, r));
        counts[j] = count;
    }
    add_to_total(count, lid);
}
