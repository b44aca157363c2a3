// Two-level grid, step 2: for box i < boxes that is placed, its (top cell, primitive) pairs
// from offsets[i] on (the exclusive scan of step 1's counts, so the pairs are in primitive
// order), x fastest, as build_grid writes them, each counted in its top cell.
//!include "grid/common.wgsl"

@group(0) @binding(0) var<uniform> params: GridBuildParams;
@group(0) @binding(1) var<storage, read> grid_boxes: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> cells: array<u32>;
@group(0) @binding(4) var<storage, read_write> prims: array<u32>;
@group(0) @binding(5) var<storage, read_write> cell_counts: array<atomic<u32>>;

@compute @workgroup_size(GRID_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = grid_index(gid, nwg);
    if i >= params.boxes {
        return;
    }
    let lo_words = grid_boxes[2u * i];
    if lo_words.w == 0u {
        return;
    }
    let res = params.res.xyz;
    let first = cells_of(bitcast<vec3<f32>>(lo_words.xyz), res);
    let last = cells_of(bitcast<vec3<f32>>(grid_boxes[2u * i + 1u].xyz), res);
    var k = offsets[i];
    for (var z = first.z; z <= last.z; z++) {
        for (var y = first.y; y <= last.y; y++) {
            for (var x = first.x; x <= last.x; x++) {
                let cell = x + res.x * (y + res.y * z);
                cells[k] = cell;
                prims[k] = i;
                atomicAdd(&cell_counts[cell], 1u);
                k++;
            }
        }
    }
}
