// Two-level grid, step 5 (top cells): top cell c's two words, its first leaf and its packed
// leaf resolution (0: empty), at HEADER_WORDS + 2c of the grid's words.
//!include "grid/common.wgsl"

@group(0) @binding(0) var<uniform> params: GridBuildParams;
@group(0) @binding(1) var<storage, read> first_leaf: array<u32>;
@group(0) @binding(2) var<storage, read> packed: array<u32>;
@group(0) @binding(3) var<storage, read_write> words: array<u32>;

@compute @workgroup_size(GRID_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = grid_index(gid, nwg);
    if c >= params.res.w {
        return;
    }
    words[HEADER_WORDS + 2u * c] = first_leaf[c];
    words[HEADER_WORDS + 2u * c + 1u] = packed[c];
}
