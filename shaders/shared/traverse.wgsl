// The fused top-level + middle-level QBVH traversal of src/accel/prepared.rs (Prepared::traverse)
// with paper 004's compact 32-bit stack: one loop, one stack; entering an instance pushes the
// RETURN_TO_WORLD marker and switches to the object-space ray, popping the marker switches back.
// Ties in t go to the lower (instance, prim), so the result does not depend on the visiting order.
//!include "shared/intersect.wgsl"

// prepared.rs TRAVERSAL_STACK_SIZE and RETURN_TO_WORLD.
const TRAVERSAL_STACK_SIZE: u32 = 64u;
const RETURN_TO_WORLD: u32 = 0xffffffffu;

var<private> stack: array<u32, 64>;
var<private> stack_len: u32;

struct TraceHit {
    t: f32,
    instance: u32,
    prim: u32,
    st: vec2<f32>,
}

// prepared.rs next_up: the next float above a non-negative finite x.
fn next_up(x: f32) -> f32 {
    if is_finite_f32(x) && x >= 0.0 {
        return bitcast<f32>(bitcast<u32>(x) + 1u);
    }
    return x;
}

// Node k of the tree being walked: the top level, or the mesh whose nodes start at `base`.
fn load_node(in_object: bool, base: u32, k: u32) -> QbvhNode {
    if in_object {
        return mesh_nodes[base + k];
    }
    return top_nodes[k];
}

fn node_entry(n: QbvhNode, origin: vec3<f32>, inv_dir: vec3<f32>, t_min: f32, t_max: f32) -> f32 {
    return slab_entry(origin, inv_dir, n.bounds_min, n.bounds_max, t_min, t_max);
}

// qbvh.rs visit_children: the nearest hit child (or NONE), the other hit ones pushed nearest first.
fn visit_children(in_object: bool, base: u32, n: QbvhNode, origin: vec3<f32>, inv_dir: vec3<f32>, t_min: f32, t_max: f32) -> u32 {
    let first = n.first;
    let count = min(n.meta_bits & 0x7fffffffu, 4u);
    var d = vec4<f32>(f32_infinity());
    for (var k = 0u; k < count; k++) {
        let e = node_entry(load_node(in_object, base, first + k), origin, inv_dir, t_min, t_max);
        if e >= 0.0 {
            d[k] = e;
        }
    }
    let sorted = sort_children(d);
    if sorted.dist[0] == f32_infinity() {
        return NONE;
    }
    let more = more_hits(sorted.dist);
    if more > 0u && stack_len < TRAVERSAL_STACK_SIZE {
        stack[stack_len] = compact_entry(first, sorted.order, more);
        stack_len += 1u;
    }
    return first + sorted.order[0];
}

fn is_closer(t: f32, instance: u32, prim: u32, best: TraceHit) -> bool {
    if best.instance == NONE {
        return true;
    }
    return t < best.t || (t == best.t && (instance < best.instance || (instance == best.instance && prim < best.prim)));
}

// The closest hit of origin + t·dir in (t_min, t_max), or with `any_hit` the first one found;
// instance = NONE for a miss.
fn trace_ray(origin: vec3<f32>, dir: vec3<f32>, t_min: f32, t_max: f32, any_hit: bool) -> TraceHit {
    var best = TraceHit(f32_infinity(), NONE, NONE, vec2<f32>(0.0));
    var limit = t_max;
    let world_inv = 1.0 / dir;
    stack_len = 0u;
    var in_object = false;
    var instance = 0u;
    var mesh: MeshRecord;
    var o_origin = origin;
    var o_dir = dir;
    var o_inv = world_inv;
    var node = NONE;
    if params.top_node_count > 0u && node_entry(top_nodes[0], origin, world_inv, t_min, limit) >= 0.0 {
        node = 0u;
    }
    loop {
        if node == NONE {
            if stack_len == 0u {
                break;
            }
            let top = stack[stack_len - 1u];
            if top == RETURN_TO_WORLD {
                stack_len -= 1u;
                in_object = false;
                continue;
            }
            // Pop the next sibling; cull it if the closest hit so far lies in front of it.
            let popped = compact_pop(top);
            if popped.y == NONE {
                stack_len -= 1u;
            } else {
                stack[stack_len - 1u] = popped.y;
            }
            var ro = origin;
            var ri = world_inv;
            if in_object {
                ro = o_origin;
                ri = o_inv;
            }
            if node_entry(load_node(in_object, mesh.node_offset, popped.x), ro, ri, t_min, limit) >= 0.0 {
                node = popped.x;
            }
            continue;
        }
        if !in_object {
            let top = top_nodes[node];
            if (top.meta_bits & 0x80000000u) == 0u {
                node = visit_children(false, 0u, top, origin, world_inv, t_min, limit);
                continue;
            }
            // A top leaf holds exactly one instance; enter it.
            instance = top_instance_refs[top.first];
            let record = instances[instance];
            mesh = meshes[record.mesh];
            o_origin = rows_point(record.world_to_object, origin);
            o_dir = rows_vector(record.world_to_object, dir);
            o_inv = 1.0 / o_dir;
            in_object = true;
            if stack_len < TRAVERSAL_STACK_SIZE {
                stack[stack_len] = RETURN_TO_WORLD;
                stack_len += 1u;
            }
            node = 0u;
            continue;
        }
        let n = mesh_nodes[mesh.node_offset + node];
        if (n.meta_bits & 0x80000000u) == 0u {
            node = visit_children(true, mesh.node_offset, n, o_origin, o_inv, t_min, limit);
            continue;
        }
        let count = n.meta_bits & 0x7fffffffu;
        for (var i = 0u; i < count; i++) {
            let slot = mesh.prim_ref_offset + n.first + i;
            let prim = prim_refs[slot];
            var tie_limit = limit;
            if best.instance != NONE {
                tie_limit = next_up(limit);
            }
            let h = intersect_prim(mesh, prim, slot, o_origin, o_dir, t_min, tie_limit);
            if h.hit {
                if any_hit {
                    return TraceHit(h.t, instance, prim, h.st);
                }
                if is_closer(h.t, instance, prim, best) {
                    limit = h.t;
                    best = TraceHit(h.t, instance, prim, h.st);
                }
            }
        }
        node = NONE;
    }
    return best;
}
