// Two-level grid, step 5 (leaves and references): for sorted reference k < refs, its primitive
// at refs_at + k, and, where a run of equal leaves starts or ends, that leaf's first reference
// or end (the host cleared the leaves' words before, so empty leaves read 0, 0).
//!include "grid/common.wgsl"

@group(0) @binding(0) var<uniform> params: GridBuildParams;
@group(0) @binding(1) var<storage, read> leaf_keys: array<u32>;
@group(0) @binding(2) var<storage, read> leaf_prims: array<u32>;
@group(0) @binding(3) var<storage, read_write> words: array<u32>;

@compute @workgroup_size(GRID_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = grid_index(gid, nwg);
    if k >= params.refs {
        return;
    }
    let leaf = leaf_keys[k];
    let at = params.leaves_at + 2u * leaf;
    if k == 0u || leaf_keys[k - 1u] != leaf {
        words[at] = k;
    }
    if k + 1u == params.refs || leaf_keys[k + 1u] != leaf {
        words[at + 1u] = k + 1u;
    }
    words[params.refs_at + k] = leaf_prims[k];
}
