// The wide layout's trace_ray (shared/traverse.wgsl): the twin of src/accel/wide_traverse.rs
// (Ylitie, Karras and Laine 2017, Algorithm 1) over the 8-wide compressed nodes of
// src/accel/wide.rs, step for step. A group is a pair of words: a node group
// [child_base, hits << 24 | imask] or a primitive group [prim_base, bits].

// wide.rs WIDE_STACK_SIZE; the marker WIDE_RETURN_TO_WORLD is the pair (0, 0).
const WIDE_STACK_SIZE: u32 = 32u;

var<private> wstack: array<vec2<u32>, 32>;
var<private> wstack_len: u32;

fn wide_push(entry: vec2<u32>) {
    if wstack_len < WIDE_STACK_SIZE {
        wstack[wstack_len] = entry;
        wstack_len += 1u;
    }
}

// wide.rs octant_inv.
fn wide_octant_inv(d: vec3<f32>) -> u32 {
    return 7u ^ (select(0u, 4u, d.x < 0.0) | select(0u, 2u, d.y < 0.0) | select(0u, 1u, d.z < 0.0));
}

// Byte `slot` (0..8) of a pair of words.
fn wide_byte(words: vec2<u32>, slot: u32) -> u32 {
    return (select(words.x, words.y, slot >= 4u) >> ((slot & 3u) * 8u)) & 0xffu;
}

// 2^e for a biased exponent byte.
fn wide_step(biased: u32) -> f32 {
    return bitcast<f32>(biased << 23u);
}

// WideNode::intersect_children: (node group, primitive group) of the children whose decoded
// boxes the ray enters in [t_min, t_max].
fn wide_intersect(n: WideNode, origin: vec3<f32>, inv_dir: vec3<f32>, oct_inv: u32, t_min: f32, t_max: f32, prims: ptr<function, vec2<u32>>) -> vec2<u32> {
    let step = vec3<f32>(wide_step(n.exps_imask & 0xffu), wide_step((n.exps_imask >> 8u) & 0xffu), wide_step((n.exps_imask >> 16u) & 0xffu));
    let imask = n.exps_imask >> 24u;
    var hits = 0u;
    var leaf_bits = 0u;
    for (var slot = 0u; slot < 8u; slot++) {
        let m = wide_byte(n.meta_bits, slot);
        if m == 0u {
            continue;
        }
        let lo = vec3<f32>(f32(wide_byte(n.q[0].xy, slot)), f32(wide_byte(n.q[0].zw, slot)), f32(wide_byte(n.q[1].xy, slot)));
        let hi = vec3<f32>(f32(wide_byte(n.q[1].zw, slot)), f32(wide_byte(n.q[2].xy, slot)), f32(wide_byte(n.q[2].zw, slot)));
        if slab_entry(origin, inv_dir, n.origin + lo * step, n.origin + hi * step, t_min, t_max) < 0.0 {
            continue;
        }
        if (imask & (1u << slot)) != 0u {
            hits |= 1u << (slot ^ oct_inv);
        } else {
            leaf_bits |= (m >> 5u) << (m & 0x1fu);
        }
    }
    *prims = vec2<u32>(n.prim_base, leaf_bits);
    if hits == 0u {
        return vec2<u32>(0u);
    }
    return vec2<u32>(n.child_base, (hits << 24u) | imask);
}

// wide.rs take_child: the node group's highest hit, removed from it.
fn wide_take_child(group: ptr<function, vec2<u32>>, oct_inv: u32) -> u32 {
    let bit = firstLeadingBit((*group).y);
    (*group).y &= ~(1u << bit);
    let slot = (bit - 24u) ^ oct_inv;
    return (*group).x + countOneBits((*group).y & 0xffu & ((1u << slot) - 1u));
}

fn wide_has_children(group: vec2<u32>) -> bool {
    return (group.y & 0xff000000u) != 0u;
}

// The closest hit of origin + t·dir in (t_min, t_max), or with `any_hit` the first one found;
// instance = NONE for a miss.
fn trace_ray(origin: vec3<f32>, dir: vec3<f32>, t_min: f32, t_max: f32, any_hit: bool) -> TraceHit {
    var best = TraceHit(f32_infinity(), NONE, NONE, vec2<f32>(0.0));
    if params.top_node_count == 0u {
        return best;
    }
    var limit = t_max;
    let world_inv = 1.0 / dir;
    let world_oct = wide_octant_inv(dir);
    wstack_len = 0u;
    var in_object = false;
    var instance = 0u;
    var mesh: MeshRecord;
    var o_origin = origin;
    var o_dir = dir;
    var o_inv = world_inv;
    var oct_inv = world_oct;
    // wide.rs root_group.
    var group = vec2<u32>(0u, (1u << 31u) | (1u << (7u ^ world_oct)));
    loop {
        var prims = vec2<u32>(0u);
        if wide_has_children(group) {
            let child = wide_take_child(&group, oct_inv);
            if wide_has_children(group) {
                wide_push(group);
            }
            if in_object {
                group = wide_intersect(mesh_nodes[mesh.node_offset + child], o_origin, o_inv, oct_inv, t_min, limit, &prims);
            } else {
                group = wide_intersect(top_nodes[child], origin, world_inv, oct_inv, t_min, limit, &prims);
            }
        } else {
            // A popped primitive group (the top level's instances still to enter).
            prims = group;
            group = vec2<u32>(0u);
        }
        while prims.y != 0u {
            let index = prims.x + firstTrailingBit(prims.y);
            prims.y &= prims.y - 1u;
            if !in_object {
                // Enter the instance; come back for the rest of the groups.
                if wide_has_children(group) {
                    wide_push(group);
                }
                if prims.y != 0u {
                    wide_push(prims);
                }
                wide_push(vec2<u32>(0u));
                instance = top_instance_refs[index];
                let record = instances[instance];
                mesh = meshes[record.mesh];
                o_origin = rows_point(record.world_to_object, origin);
                o_dir = rows_vector(record.world_to_object, dir);
                o_inv = 1.0 / o_dir;
                oct_inv = wide_octant_inv(o_dir);
                in_object = true;
                group = vec2<u32>(0u, (1u << 31u) | (1u << (7u ^ oct_inv)));
                prims = vec2<u32>(0u);
                break;
            }
            let slot = mesh.prim_ref_offset + index;
            if test_reference(mesh, instance, prim_refs[slot], slot, o_origin, o_dir, o_inv, t_min, any_hit, &limit, &best) {
                return best;
            }
        }
        if !wide_has_children(group) && prims.y == 0u {
            // Nothing left here: the next group from the stack, leaving instances whose entries
            // are done.
            loop {
                if wstack_len == 0u {
                    return best;
                }
                wstack_len -= 1u;
                let entry = wstack[wstack_len];
                if entry.y == 0u {
                    in_object = false;
                    oct_inv = world_oct;
                    continue;
                }
                group = entry;
                break;
            }
        }
    }
    return best;
}
