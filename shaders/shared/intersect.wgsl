// Ray-box and ray-primitive tests: twins of src/accel/aabb.rs (SlabRay), src/accel/primitives.rs
// (the watertight triangle test, quads as two triangles) and the VD fallback's cell trees in
// src/accel/vd_fallback.rs, written to give the same results bit for bit where WGSL allows.
//!include "shared/scene.wgsl"
//!include "shared/ray_tests.wgsl"

struct PrimHit {
    hit: bool,
    t: f32,
    st: vec2<f32>,
}

// primitives.rs intersect_quad: (v0, v1, v2) then (v0, v2, v3), with the patch parameter.
fn intersect_quad(origin: vec3<f32>, dir: vec3<f32>, v0: vec3<f32>, v1: vec3<f32>, v2: vec3<f32>, v3: vec3<f32>, t_min: f32, t_max: f32) -> PrimHit {
    let first = intersect_triangle(origin, dir, v0, v1, v2, t_min, t_max);
    var limit = t_max;
    if first.hit {
        limit = first.t;
    }
    let second = intersect_triangle(origin, dir, v0, v2, v3, t_min, limit);
    if second.hit {
        return PrimHit(true, second.t, vec2<f32>(second.b1, second.b1 + second.b2));
    }
    if first.hit {
        return PrimHit(true, first.t, vec2<f32>(first.b1 + first.b2, first.b2));
    }
    return PrimHit(false, 0.0, vec2<f32>(0.0));
}

// vd_fallback.rs morton_decode: (even bits, odd bits).
fn vd_grid_point(vd: VdPatch, i: u32, j: u32) -> vec3<f32> {
    let row = params.vd_resolution + 1u;
    return vd_points[vd.grid_offset + j * row + i].xyz;
}

fn vd_intersect_cell(vd: VdPatch, cell: vec2<u32>, origin: vec3<f32>, dir: vec3<f32>, t_min: f32, t_max: f32) -> PrimHit {
    let x = cell.x;
    let y = cell.y;
    var h = intersect_quad(origin, dir, vd_grid_point(vd, x, y), vd_grid_point(vd, x + 1u, y),
        vd_grid_point(vd, x + 1u, y + 1u), vd_grid_point(vd, x, y + 1u), t_min, t_max);
    let n = f32(params.vd_resolution);
    h.st = (vec2<f32>(f32(x), f32(y)) + h.st) / n;
    return h;
}

// The compact stack of the VD patches' cell trees (depth <= 8 levels, one entry per level).
var<private> vd_stack: array<u32, 16>;
var<private> vd_stack_len: u32;

const NODE_INDEX_BITS: u32 = 26u;
const NODE_INDEX_MASK: u32 = 0x3ffffffu;

// CompactEntry::pop on a raw entry: (node, remaining entry or NONE).
fn compact_pop(entry: u32) -> vec2<u32> {
    let first = entry & NODE_INDEX_MASK;
    var offsets = entry >> NODE_INDEX_BITS;
    let current = offsets & 3u;
    offsets = offsets >> 2u;
    if (offsets & 3u) == current {
        return vec2<u32>(first + current, NONE);
    }
    return vec2<u32>(first + current, first | ((offsets | ((offsets << 2u) & 0x30u)) << NODE_INDEX_BITS));
}

// The entry for the siblings `first + order[1..1+more]` (more in 1..=3), nearest first.
fn compact_entry(first: u32, order: vec4<u32>, more: u32) -> u32 {
    let o0 = order[1];
    var o1 = o0;
    if more >= 2u {
        o1 = order[2];
    }
    var o2 = o1;
    if more >= 3u {
        o2 = order[3];
    }
    return first | ((o0 | (o1 << 2u) | (o2 << 4u)) << NODE_INDEX_BITS);
}

struct SortedChildren {
    order: vec4<u32>,
    dist: vec4<f32>,
}

// qbvh.rs sort_children: the 5-comparator network, nearest first.
fn sort_children(d: vec4<f32>) -> SortedChildren {
    var dist = d;
    var order = vec4<u32>(0u, 1u, 2u, 3u);
    // (0,1) (2,3) (0,2) (1,3) (1,2)
    if dist[1] < dist[0] { let t = dist[0]; dist[0] = dist[1]; dist[1] = t; let o = order[0]; order[0] = order[1]; order[1] = o; }
    if dist[3] < dist[2] { let t = dist[2]; dist[2] = dist[3]; dist[3] = t; let o = order[2]; order[2] = order[3]; order[3] = o; }
    if dist[2] < dist[0] { let t = dist[0]; dist[0] = dist[2]; dist[2] = t; let o = order[0]; order[0] = order[2]; order[2] = o; }
    if dist[3] < dist[1] { let t = dist[1]; dist[1] = dist[3]; dist[3] = t; let o = order[1]; order[1] = order[3]; order[3] = o; }
    if dist[2] < dist[1] { let t = dist[1]; dist[1] = dist[2]; dist[2] = t; let o = order[1]; order[1] = order[2]; order[2] = o; }
    return SortedChildren(order, dist);
}

// How many of the sorted distances after the first are hits.
fn more_hits(dist: vec4<f32>) -> u32 {
    let inf = f32_infinity();
    if dist[1] == inf { return 0u; }
    if dist[2] == inf { return 1u; }
    if dist[3] == inf { return 2u; }
    return 3u;
}

fn vd_node_entry(tree_offset: u32, k: u32, origin: vec3<f32>, inv_dir: vec3<f32>, t_min: f32, limit: f32) -> f32 {
    let b = vd_tree[tree_offset + k];
    return slab_entry(origin, inv_dir, b.min, b.max, t_min, limit);
}

fn vd_stack_pop() -> u32 {
    if vd_stack_len == 0u {
        return NONE;
    }
    let popped = compact_pop(vd_stack[vd_stack_len - 1u]);
    if popped.y == NONE {
        vd_stack_len -= 1u;
    } else {
        vd_stack[vd_stack_len - 1u] = popped.y;
    }
    return popped.x;
}

// PretessellatedVdFallback::intersect: closest hit through the vd's complete 4-ary cell tree.
fn vd_intersect(vd: VdPatch, origin: vec3<f32>, dir: vec3<f32>, t_min: f32, t_max: f32) -> PrimHit {
    var best = PrimHit(false, 0.0, vec2<f32>(0.0));
    let inv_dir = 1.0 / dir;
    let n = params.vd_resolution;
    let levels = params.vd_levels;
    let tree_len = ((1u << (2u * (levels + 1u))) - 1u) / 3u;
    let first_leaf = tree_len - n * n;
    var limit = t_max;
    if vd_node_entry(vd.tree_offset, 0u, origin, inv_dir, t_min, limit) < 0.0 {
        return best;
    }
    vd_stack_len = 0u;
    var node = 0u;
    loop {
        if node == NONE {
            break;
        }
        if node >= first_leaf {
            let h = vd_intersect_cell(vd, morton_decode(node - first_leaf), origin, dir, t_min, limit);
            if h.hit {
                limit = h.t;
                best = h;
            }
            node = vd_stack_pop();
        } else {
            let first = 4u * node + 1u;
            var d = vec4<f32>(f32_infinity());
            for (var k = 0u; k < 4u; k++) {
                let e = vd_node_entry(vd.tree_offset, first + k, origin, inv_dir, t_min, limit);
                if e >= 0.0 {
                    d[k] = e;
                }
            }
            let sorted = sort_children(d);
            if sorted.dist[0] == f32_infinity() {
                node = vd_stack_pop();
            } else {
                let more = more_hits(sorted.dist);
                if more > 0u {
                    vd_stack[vd_stack_len] = compact_entry(first, sorted.order, more);
                    vd_stack_len += 1u;
                }
                node = first + sorted.order[0];
            }
        }
    }
    return best;
}

// Prepared::intersect_prim: primitive `prim` of `mesh`, referenced from prim_refs[slot], against
// an object-space ray. Triangles read their vertices from leaf_triangles (the same values as
// positions[triangles[..]], gathered in reference order).
fn intersect_prim(mesh: MeshRecord, prim: u32, slot: u32, origin: vec3<f32>, dir: vec3<f32>, t_min: f32, t_max: f32) -> PrimHit {
    if prim < mesh.triangle_count {
        let b = 3u * slot;
        let h = intersect_triangle(origin, dir, leaf_triangles[b].xyz, leaf_triangles[b + 1u].xyz, leaf_triangles[b + 2u].xyz, t_min, t_max);
        return PrimHit(h.hit, h.t, vec2<f32>(h.b1, h.b2));
    }
    let q = prim - mesh.triangle_count;
    // Kernels for scenes without VD patches leave this branch out (fewer registers in the loop).
    //!if VD_PATCHES
    if (mesh.flags & MESH_DISPLACED) != 0u {
        let vd = vd_patches[mesh.vd_patch_offset + q];
        if slab_entry(origin, 1.0 / dir, vd.bounds_min, vd.bounds_max, t_min, t_max) < 0.0 {
            return PrimHit(false, 0.0, vec2<f32>(0.0));
        }
        return vd_intersect(vd, origin, dir, t_min, t_max);
    }
    //!endif
    let v = quads[mesh.quad_offset + q];
    return intersect_quad(origin, dir, position_of(v.x), position_of(v.y), position_of(v.z), position_of(v.w), t_min, t_max);
}
