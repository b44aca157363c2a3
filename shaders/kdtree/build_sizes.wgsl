// Point kd-tree build, output stage, bottom-up (one dispatch per level, deepest first, one
// invocation per slot): the size in words of every large node's subtree (its cut-off chain of
// three words per cut, then a two-word split over its children or a leaf), counted into the
// build statistics; small roots already hold theirs.
//!include "kdtree/build_common.wgsl"

@group(0) @binding(0) var<uniform> params: KdParams;
@group(0) @binding(1) var<storage, read_write> heap_nodes: array<u32>;
// [words of the whole tree, nodes, leaves, max branch depth]
@group(0) @binding(2) var<storage, read_write> stats: array<atomic<u32>, 4>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let s = element_index(gid, nwg);
    if s >= params.level_slots {
        return;
    }
    let h = params.level_base + s;
    let node = h * NODE_WORDS;
    let info = heap_nodes[node + NODE_INFO];
    let kind = info & 3u;
    if kind == KIND_DEAD {
        return;
    }
    var size = 0u;
    if kind == KIND_SMALL {
        size = heap_nodes[node + NODE_SIZE];
    } else {
        let cuts = countOneBits((info >> 4u) & 63u);
        if kind == KIND_EQUAL {
            size = 3u * cuts + 1u + heap_nodes[node + NODE_COUNT];
            atomicAdd(&stats[1], 2u * cuts + 1u);
            atomicAdd(&stats[2], cuts + 1u);
            atomicMax(&stats[3], params.level);
        } else {
            size = 3u * cuts + 2u + heap_nodes[(2u * h + 1u) * NODE_WORDS + NODE_SIZE]
                + heap_nodes[(2u * h + 2u) * NODE_WORDS + NODE_SIZE];
            atomicAdd(&stats[1], 2u * cuts + 1u);
            atomicAdd(&stats[2], cuts);
        }
        heap_nodes[node + NODE_SIZE] = size;
    }
    if h == 0u {
        atomicStore(&stats[0], size);
    }
}
