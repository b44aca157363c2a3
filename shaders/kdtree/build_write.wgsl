// Point kd-tree build, output stage, top-down (one dispatch per level, root first, one
// invocation per slot): a node at its offset (from its parent; the root at 0) writes its
// cut-off chain (min sides: split, empty leaf, rest; max sides: split, rest, empty leaf), then
// either its median split and its children's offsets, or its leaf (all-equal nodes), or moves
// its small subtree from the scratch with the right-child indices made absolute. At the word of
// every leaf entry it also writes the point's position and index (w, as bits) into leaf_points
// (gpu::kdtree::leaf_points_of is the CPU twin).
//!include "kdtree/build_common.wgsl"

@group(0) @binding(0) var<uniform> params: KdParams;
@group(0) @binding(1) var<storage, read> small_list: array<u32>;
@group(0) @binding(2) var<storage, read_write> heap_nodes: array<u32>;
@group(0) @binding(3) var<storage, read> heap_boxes: array<f32>;
@group(0) @binding(4) var<storage, read> scratch: array<u32>;
@group(0) @binding(5) var<storage, read_write> words: array<u32>;
@group(0) @binding(6) var<storage, read> points: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> leaf_points: array<vec4<f32>>;

// Word w is a leaf entry naming point `index`.
fn write_leaf_entry(w: u32, index: u32) {
    words[w] = index;
    var p = vec3<f32>(0.0);
    if index < arrayLength(&points) {
        p = points[index].xyz;
    }
    leaf_points[w] = vec4<f32>(p, bitcast<f32>(index));
}

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
    var o = select(heap_nodes[node + NODE_OFFSET], 0u, h == 0u);
    var size = heap_nodes[node + NODE_SIZE];
    let start = heap_nodes[node + NODE_START];
    let count = heap_nodes[node + NODE_COUNT];
    if kind == KIND_SMALL {
        let base = 4u * start;
        var i = 0u;
        while i < size {
            let word = scratch[base + i];
            if (word >> 30u) == 3u {
                let leaf_end = i + 1u + (word & KD_INDEX_MASK);
                words[o + i] = word;
                i += 1u;
                for (; i < leaf_end; i++) {
                    write_leaf_entry(o + i, scratch[base + i]);
                }
            } else {
                words[o + i] = (word & ~KD_INDEX_MASK) | (o + (word & KD_INDEX_MASK));
                words[o + i + 1u] = scratch[base + i + 1u];
                i += 2u;
            }
        }
        return;
    }
    let cuts = (info >> 4u) & 63u;
    for (var side = 0u; side < 6u; side++) {
        if (cuts & (1u << side)) == 0u {
            continue;
        }
        let a = side / 2u;
        let rest = size - 3u;
        if (side & 1u) == 0u {
            words[o] = (a << 30u) | (o + 3u);
            words[o + 1u] = bitcast<u32>(heap_boxes[h * BOX_WORDS + 6u + a]);
            words[o + 2u] = KD_LEAF;
            o += 3u;
        } else {
            words[o] = (a << 30u) | (o + 2u + rest);
            words[o + 1u] = bitcast<u32>(heap_boxes[h * BOX_WORDS + 9u + a]);
            words[o + 2u + rest] = KD_LEAF;
            o += 2u;
        }
        size = rest;
    }
    if kind == KIND_EQUAL {
        words[o] = KD_LEAF | count;
        for (var i = 0u; i < count; i++) {
            write_leaf_entry(o + 1u + i, small_list[start + i]);
        }
        return;
    }
    let axis = (info >> 2u) & 3u;
    let left_child = 2u * h + 1u;
    let right_child = 2u * h + 2u;
    let left_size = heap_nodes[left_child * NODE_WORDS + NODE_SIZE];
    words[o] = (axis << 30u) | (o + 2u + left_size);
    words[o + 1u] = heap_nodes[node + NODE_SPLIT];
    heap_nodes[left_child * NODE_WORDS + NODE_OFFSET] = o + 2u;
    heap_nodes[right_child * NODE_WORDS + NODE_OFFSET] = o + 2u + left_size;
}
