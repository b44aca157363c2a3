// The QBVH layout's trace_ray (shared/traverse.wgsl): the twin of Prepared::traverse, with the
// compact 32-bit stack of paper 004.

// The compact stack entries of qbvh.rs (paper 004).
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

// prepared.rs TRAVERSAL_STACK_SIZE and RETURN_TO_WORLD.
const TRAVERSAL_STACK_SIZE: u32 = 64u;
const RETURN_TO_WORLD: u32 = 0xffffffffu;

var<private> stack: array<u32, 64>;
var<private> stack_len: u32;

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
    var sheared: ShearedRay;
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
            // A grid is walked at once; the loop stays in the top level.
            let walked = grid_instance(mesh, instance, record, origin, dir, t_min, any_hit, &limit, &best);
            if walked == GRID_FOUND {
                return best;
            }
            if walked == GRID_WALKED {
                node = NONE;
                continue;
            }
            o_inv = 1.0 / o_dir;
            sheared = shear_ray(o_dir);
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
            if test_reference(mesh, instance, prim_refs[slot], slot, o_origin, o_dir, sheared, t_min, any_hit, &limit, &best) {
                return best;
            }
        }
        node = NONE;
    }
    return best;
}
