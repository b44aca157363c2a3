// The collapse of binary BVHs into the 8-wide compressed layout, one level of a batch of trees:
// each invocation takes one queue entry of the level (a tree, a wide node and the binary node it
// stands for), opens the inner child of largest area until there are eight children, leaves out
// those with empty boxes, places them in slots by ray octant, quantizes their boxes on the
// node's grid, writes the node, allocates its inner children in its tree (consecutive, in slot
// order), queues them for the next level and copies its leaf children's references. Twin of caustica::accel::wide::collapse_to_cwbvh, step for step and to
// the bit (the areas fused as `collapse_area`, ties broken as Rust's `max_by` and `total_cmp`
// break them); only the order of the nodes within a level, and so of the references, differs.
//!include "bvh/collapse_common.wgsl"

@group(0) @binding(0) var<storage, read> trees: array<CollapseMesh>;
@group(0) @binding(1) var<storage, read> binary: array<BinaryNodeRecord>;
@group(0) @binding(2) var<storage, read> prim_order: array<u32>;
@group(0) @binding(3) var<storage, read_write> state: array<atomic<u32>>;
// (tree, wide node, binary node, 0) entries, level after level.
@group(0) @binding(4) var<storage, read_write> queue: array<vec4<u32>>;
// Wide nodes, five vec4<u32> each (caustica::accel::wide::WideNode).
@group(0) @binding(5) var<storage, read_write> wide_nodes: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read_write> wide_prims: array<u32>;

const WIDE_CHILDREN: u32 = 8u;
const INNER_META: u32 = 56u; // 0b001_00000 | 24

fn step_of(e: i32) -> f32 {
    return bitcast<f32>(u32(e + 127) << 23u);
}

// Twin of the exponent search in quantization_grid: the smallest e in -126..=127 whose 255th
// plane is at or above hi (127 if none is), by bisection.
fn grid_exponent(origin: f32, hi: f32) -> i32 {
    var a = -126;
    var b = 127;
    loop {
        if a >= b {
            break;
        }
        let mid = a + (b - a) / 2;
        if origin + 255.0 * step_of(mid) >= hi {
            b = mid;
        } else {
            a = mid + 1;
        }
    }
    return a;
}

fn plane(origin: f32, step: f32, q: u32) -> f32 {
    return origin + f32(q) * step;
}

// Twin of quantize: the largest plane at or below lo (else 0), the smallest at or above hi
// (else 255), by bisection.
fn quantize(origin: f32, step: f32, lo: f32, hi: f32) -> vec2<u32> {
    var a = 0u;
    var b = 255u;
    loop {
        if a >= b {
            break;
        }
        let mid = a + (b - a + 1u) / 2u;
        if plane(origin, step, mid) <= lo {
            a = mid;
        } else {
            b = mid - 1u;
        }
    }
    let qlo = a;
    a = 0u;
    b = 255u;
    loop {
        if a >= b {
            break;
        }
        let mid = a + (b - a) / 2u;
        if plane(origin, step, mid) >= hi {
            b = mid;
        } else {
            a = mid + 1u;
        }
    }
    return vec2<u32>(qlo, a);
}

fn set_byte(words: vec2<u32>, slot: u32, value: u32) -> vec2<u32> {
    var w = words;
    let shift = 8u * (slot % 4u);
    if slot < 4u {
        w.x = w.x | ((value & 0xffu) << shift);
    } else {
        w.y = w.y | ((value & 0xffu) << shift);
    }
    return w;
}

// Collapses queue entry `item` of the level at depth `depth`: writes its wide node, allocates
// its inner children in its tree and queues them for the next level.
fn collapse(item: vec4<u32>, depth: u32) {
    let t = item.x;
    let w = item.y;
    let b = item.z;
    let tree = trees[t];
    let words = STATE_WORDS + TREE_WORDS * t;
    atomicMax(&state[words + TREE_DEPTH], depth);
    // The children so far: binary node, leaf child or not, and (inner ones) the key of their
    // area, read from the node's record once.
    var child: array<u32, 8>;
    var leaf: array<bool, 8>;
    var area_key: array<i32, 8>;
    var count = 0u;
    let root = binary[b];
    if root.left != BVH_NO_NODE && root.count > tree.leaf_max {
        for (var k = 0u; k < 2u; k++) {
            let c = tree.binary_base + select(root.left, root.right, k == 1u);
            let r = binary[c];
            child[k] = c;
            leaf[k] = r.left == BVH_NO_NODE || r.count <= tree.leaf_max;
            area_key[k] = total_key(collapse_area(normal_lo(r.lo), normal_hi(r.hi)));
        }
        count = 2u;
    } else {
        child[0] = b;
        leaf[0] = true;
        count = 1u;
    }
    // Open the inner child of largest area (the last of equals, as max_by takes it).
    loop {
        if count >= WIDE_CHILDREN {
            break;
        }
        var widest = WIDE_CHILDREN;
        var widest_key = 0;
        for (var i = 0u; i < count; i++) {
            if !leaf[i] && (widest == WIDE_CHILDREN || area_key[i] >= widest_key) {
                widest = i;
                widest_key = area_key[i];
            }
        }
        if widest == WIDE_CHILDREN {
            break;
        }
        let opened = binary[child[widest]];
        for (var k = 0u; k < 2u; k++) {
            let at = select(widest, count, k == 1u);
            let c = tree.binary_base + select(opened.left, opened.right, k == 1u);
            let r = binary[c];
            child[at] = c;
            leaf[at] = r.left == BVH_NO_NODE || r.count <= tree.leaf_max;
            area_key[at] = total_key(collapse_area(normal_lo(r.lo), normal_hi(r.hi)));
        }
        count += 1u;
    }
    // Leave out empty boxes, keeping the order.
    var kept = 0u;
    var lo: array<vec3<f32>, 8>;
    var hi: array<vec3<f32>, 8>;
    var parent_lo = vec3<f32>(bitcast<f32>(0x7f800000u));
    var parent_hi = -parent_lo;
    for (var i = 0u; i < count; i++) {
        let r = binary[child[i]];
        let rlo = normal_lo(r.lo);
        let rhi = normal_hi(r.hi);
        if is_empty_box(rlo, rhi) {
            continue;
        }
        child[kept] = child[i];
        leaf[kept] = leaf[i];
        lo[kept] = rlo;
        hi[kept] = rhi;
        parent_lo = min(parent_lo, rlo);
        parent_hi = max(parent_hi, rhi);
        kept += 1u;
    }
    count = kept;
    // The grid.
    // A union of normal boxes: the origin is never denormal.
    let origin = parent_lo;
    let ex = grid_exponent(origin.x, parent_hi.x);
    let ey = grid_exponent(origin.y, parent_hi.y);
    let ez = grid_exponent(origin.z, parent_hi.z);
    let steps = vec3<f32>(step_of(ex), step_of(ey), step_of(ez));
    // Slots: the cheapest free (child, slot) pair first, ties by child then slot; a pair's cost
    // is the child centroid's offset along the slot's octant diagonal.
    let centre = (parent_lo + parent_hi) * 0.5;
    var offset: array<vec3<f32>, 8>;
    for (var c = 0u; c < count; c++) {
        offset[c] = (lo[c] + hi[c]) * 0.5 - centre;
    }
    var slot_child: array<u32, 8>;
    for (var s = 0u; s < WIDE_CHILDREN; s++) {
        slot_child[s] = WIDE_CHILDREN;
    }
    var placed = 0u; // bit per child
    var free_slots = 0xffu; // bit per slot
    for (var round = 0u; round < count; round++) {
        var best_c = WIDE_CHILDREN;
        var best_s = 0u;
        var best_key = 0;
        for (var c = 0u; c < count; c++) {
            if (placed & (1u << c)) != 0u {
                continue;
            }
            let o = offset[c];
            for (var s = 0u; s < WIDE_CHILDREN; s++) {
                if (free_slots & (1u << s)) == 0u {
                    continue;
                }
                let dx = select(o.x, -o.x, (s & 4u) != 0u);
                let dy = select(o.y, -o.y, (s & 2u) != 0u);
                let dz = select(o.z, -o.z, (s & 1u) != 0u);
                let key = total_key((dx + dy) + dz);
                if best_c == WIDE_CHILDREN || key < best_key {
                    best_c = c;
                    best_s = s;
                    best_key = key;
                }
            }
        }
        slot_child[best_s] = best_c;
        placed = placed | (1u << best_c);
        free_slots = free_slots & ~(1u << best_s);
    }
    // Room for the inner children and the references.
    var inner = 0u;
    var prims = 0u;
    for (var c = 0u; c < count; c++) {
        if leaf[c] {
            prims += min(binary[child[c]].count, tree.leaf_max);
        } else {
            inner += 1u;
        }
    }
    var child_base = 0u;
    if inner > 0u {
        child_base = atomicAdd(&state[words + TREE_NODES], inner);
        if child_base + inner > tree.capacity {
            atomicStore(&state[words + TREE_OVERFLOW], 1u);
            return;
        }
    }
    var prim_base = 0u;
    if prims > 0u {
        prim_base = atomicAdd(&state[words + TREE_PRIMS], prims);
    }
    var meta_bits = vec2<u32>(0u);
    var q: array<vec2<u32>, 6>;
    var imask = 0u;
    var rank = 0u;
    var prim_offset = 0u;
    for (var s = 0u; s < WIDE_CHILDREN; s++) {
        let c = slot_child[s];
        if c == WIDE_CHILDREN {
            continue;
        }
        let qx = quantize(origin.x, steps.x, lo[c].x, hi[c].x);
        let qy = quantize(origin.y, steps.y, lo[c].y, hi[c].y);
        let qz = quantize(origin.z, steps.z, lo[c].z, hi[c].z);
        q[0] = set_byte(q[0], s, qx.x);
        q[1] = set_byte(q[1], s, qy.x);
        q[2] = set_byte(q[2], s, qz.x);
        q[3] = set_byte(q[3], s, qx.y);
        q[4] = set_byte(q[4], s, qy.y);
        q[5] = set_byte(q[5], s, qz.y);
        if leaf[c] {
            let r = binary[child[c]];
            let n = min(r.count, tree.leaf_max);
            meta_bits = set_byte(meta_bits, s, (((1u << n) - 1u) << 5u) | prim_offset);
            for (var k = 0u; k < n; k++) {
                wide_prims[tree.prim_base + prim_base + prim_offset + k] =
                    prim_order[tree.order_base + r.first + k];
            }
            prim_offset += n;
        } else {
            meta_bits = set_byte(meta_bits, s, INNER_META + s);
            imask = imask | (1u << s);
            rank += 1u;
        }
    }
    let exps = u32(ex + 127) | (u32(ey + 127) << 8u) | (u32(ez + 127) << 16u) | (imask << 24u);
    let at = 5u * (tree.node_base + w);
    wide_nodes[at] = vec4<u32>(bitcast<vec3<u32>>(origin), exps);
    wide_nodes[at + 1u] = vec4<u32>(child_base, prim_base, meta_bits.x, meta_bits.y);
    wide_nodes[at + 2u] = vec4<u32>(q[0], q[1]);
    wide_nodes[at + 3u] = vec4<u32>(q[2], q[3]);
    wide_nodes[at + 4u] = vec4<u32>(q[4], q[5]);
    // The inner children, in slot order, wait for the next level.
    if inner > 0u {
        var slot = atomicAdd(&state[STATE_QUEUE], inner);
        var next = child_base;
        for (var s = 0u; s < WIDE_CHILDREN; s++) {
            let c = slot_child[s];
            if c != WIDE_CHILDREN && !leaf[c] {
                queue[slot] = vec4<u32>(t, next, child[c], 0u);
                slot += 1u;
                next += 1u;
            }
        }
    }
}

@compute @workgroup_size(64)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let begin = atomicLoad(&state[STATE_BEGIN]);
    let end = atomicLoad(&state[STATE_END]);
    // The level's depth: the root's level is 1.
    let depth = atomicLoad(&state[STATE_LEVEL]);
    let stride = groups.x * 64u;
    for (var i = begin + gid.x; i < end; i += stride) {
        collapse(queue[i], depth);
    }
}
