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

// 2^e for a biased exponent byte.
fn wide_step(biased: u32) -> f32 {
    return bitcast<f32>(biased << 23u);
}

// wide.rs WideRay: the origin, 1/dir with components under 2^-80 taken as ±2^-80, and the axes
// the ray goes down.
struct WideRay {
    origin: vec3<f32>,
    inv: vec3<f32>,
    neg: vec3<bool>,
}

fn wide_ray(origin: vec3<f32>, dir: vec3<f32>) -> WideRay {
    let tiny = vec3<f32>(8.271806e-25);
    let neg = dir < vec3<f32>(0.0);
    let d = select(dir, select(tiny, -tiny, neg), abs(dir) < tiny);
    return WideRay(origin, vec3<f32>(1.0) / d, neg);
}

// wide.rs WIDE_FAR_SLACK (1 + 8 ε) and WIDE_ABS_SLACK (2 ε), as f32 bits.
const WIDE_FAR_SLACK_BITS: u32 = 0x3f800008u;
const WIDE_ABS_SLACK_BITS: u32 = 0x34800000u;

// One slot's part of wide_intersect: its hit bit in the node group or its primitives' bits.
fn wide_slot(m: u32, hit: bool, slot: u32, imask: u32, oct_inv: u32, hits: ptr<function, u32>, leaf_bits: ptr<function, u32>) {
    if !hit {
        return;
    }
    if (imask & (1u << slot)) != 0u {
        *hits |= 1u << (slot ^ oct_inv);
    } else {
        *leaf_bits |= (m >> 5u) << (m & 0x1fu);
    }
}

// WideNode::intersect_children: (node group, primitive group) of the children whose boxes the
// ray enters in [t_min, t_max], four slots at a time.
fn wide_intersect(n: WideNode, ray: WideRay, oct_inv: u32, t_min: f32, t_max: f32, prims: ptr<function, vec2<u32>>) -> vec2<u32> {
    let step = vec3<f32>(wide_step(n.exps_imask & 0xffu), wide_step((n.exps_imask >> 8u) & 0xffu), wide_step((n.exps_imask >> 16u) & 0xffu));
    let big = vec3<f32>(3.40282347e38);
    let adj_s = clamp(step * ray.inv, -big, big);
    let adj_o = (n.origin - ray.origin) * ray.inv;
    let a = abs(adj_o);
    let slack = max(max(a.x, a.y), a.z) * bitcast<f32>(WIDE_ABS_SLACK_BITS);
    let far_slack = vec4<f32>(bitcast<f32>(WIDE_FAR_SLACK_BITS));
    let lo_x = n.q[0].xy;
    let lo_y = n.q[0].zw;
    let lo_z = n.q[1].xy;
    let hi_x = n.q[1].zw;
    let hi_y = n.q[2].xy;
    let hi_z = n.q[2].zw;
    let near_x = select(lo_x, hi_x, ray.neg.x);
    let near_y = select(lo_y, hi_y, ray.neg.y);
    let near_z = select(lo_z, hi_z, ray.neg.z);
    let far_x = select(hi_x, lo_x, ray.neg.x);
    let far_y = select(hi_y, lo_y, ray.neg.y);
    let far_z = select(hi_z, lo_z, ray.neg.z);
    let imask = n.exps_imask >> 24u;
    var hits = 0u;
    var leaf_bits = 0u;
    for (var h = 0u; h < 2u; h++) {
        let nx = fma(vec4<f32>(unpack4xU8(near_x[h])), vec4<f32>(adj_s.x), vec4<f32>(adj_o.x));
        let ny = fma(vec4<f32>(unpack4xU8(near_y[h])), vec4<f32>(adj_s.y), vec4<f32>(adj_o.y));
        let nz = fma(vec4<f32>(unpack4xU8(near_z[h])), vec4<f32>(adj_s.z), vec4<f32>(adj_o.z));
        let fx = fma(vec4<f32>(unpack4xU8(far_x[h])), vec4<f32>(adj_s.x), vec4<f32>(adj_o.x));
        let fy = fma(vec4<f32>(unpack4xU8(far_y[h])), vec4<f32>(adj_s.y), vec4<f32>(adj_o.y));
        let fz = fma(vec4<f32>(unpack4xU8(far_z[h])), vec4<f32>(adj_s.z), vec4<f32>(adj_o.z));
        let entry = max(max(max(nx, ny), nz) - vec4<f32>(slack), vec4<f32>(t_min));
        let exit = min(fma(min(min(fx, fy), fz), far_slack, vec4<f32>(slack)), vec4<f32>(t_max));
        let hit = entry <= exit;
        let m = unpack4xU8(n.meta_bits[h]);
        let base = 4u * h;
        wide_slot(m.x, hit.x, base, imask, oct_inv, &hits, &leaf_bits);
        wide_slot(m.y, hit.y, base + 1u, imask, oct_inv, &hits, &leaf_bits);
        wide_slot(m.z, hit.z, base + 2u, imask, oct_inv, &hits, &leaf_bits);
        wide_slot(m.w, hit.w, base + 3u, imask, oct_inv, &hits, &leaf_bits);
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

//!if ONE_INSTANCE
// The trace_ray of a scene whose top level holds one instance (src/gpu/backend.rs compiles
// it then): the ray goes straight into that instance's object space and walks its mesh's tree,
// with none of the fused loop's state (the level it is in, the world ray, the instance's
// record). It finds what the fused loop below finds: the top level only culls, the object-space
// ray and the tests are the same. A merged mesh (one for the parts of an OBJ file) makes most
// scenes of one file such a scene.
fn trace_ray(origin: vec3<f32>, dir: vec3<f32>, t_min: f32, t_max: f32, any_hit: bool) -> TraceHit {
    var best = TraceHit(f32_infinity(), NONE, NONE, vec2<f32>(0.0));
    if params.top_node_count == 0u {
        return best;
    }
    let instance = top_instance_refs[0];
    let record = instances[instance];
    let mesh = meshes[record.mesh];
    let o_dir = rows_vector(record.world_to_object, dir);
    var grid_limit = t_max;
    if grid_instance(mesh, instance, record, origin, dir, t_min, any_hit, &grid_limit, &best) != GRID_NOT {
        return best;
    }
    let ray = wide_ray(rows_point(record.world_to_object, origin), o_dir);
    let sheared = shear_ray(o_dir);
    let oct_inv = wide_octant_inv(o_dir);
    var limit = t_max;
    wstack_len = 0u;
    var group = vec2<u32>(0u, (1u << 31u) | (1u << (7u ^ oct_inv)));
    loop {
        var prims = vec2<u32>(0u);
        if wide_has_children(group) {
            let child = wide_take_child(&group, oct_inv);
            if wide_has_children(group) {
                wide_push(group);
            }
            group = wide_intersect(mesh_nodes[mesh.node_offset + child], ray, oct_inv, t_min, limit, &prims);
        }
        while prims.y != 0u {
            let index = prims.x + firstTrailingBit(prims.y);
            prims.y &= prims.y - 1u;
            let slot = mesh.prim_ref_offset + index;
            if test_reference(mesh, instance, prim_refs[slot], slot, ray.origin, o_dir, sheared, t_min, any_hit, &limit, &best) {
                return best;
            }
        }
        // Only node groups are pushed in one mesh's tree.
        if !wide_has_children(group) {
            if wstack_len == 0u {
                return best;
            }
            wstack_len -= 1u;
            group = wstack[wstack_len];
        }
    }
    return best;
}
//!else
// The closest hit of origin + t·dir in (t_min, t_max), or with `any_hit` the first one found;
// instance = NONE for a miss. Only the current level's ray is kept (the world ray's test data
// is made again on leaving an instance), so that the loop holds few registers.
fn trace_ray(origin: vec3<f32>, dir: vec3<f32>, t_min: f32, t_max: f32, any_hit: bool) -> TraceHit {
    var best = TraceHit(f32_infinity(), NONE, NONE, vec2<f32>(0.0));
    if params.top_node_count == 0u {
        return best;
    }
    var limit = t_max;
    wstack_len = 0u;
    var in_object = false;
    var instance = 0u;
    var mesh: MeshRecord;
    // The current level's ray: its node-test form, its direction, octant and shear.
    var ray = wide_ray(origin, dir);
    var cur_dir = dir;
    var oct_inv = wide_octant_inv(dir);
    var sheared: ShearedRay;
    // wide.rs root_group.
    var group = vec2<u32>(0u, (1u << 31u) | (1u << (7u ^ oct_inv)));
    loop {
        var prims = vec2<u32>(0u);
        if wide_has_children(group) {
            let child = wide_take_child(&group, oct_inv);
            if wide_has_children(group) {
                wide_push(group);
            }
            if in_object {
                group = wide_intersect(mesh_nodes[mesh.node_offset + child], ray, oct_inv, t_min, limit, &prims);
            } else {
                group = wide_intersect(top_nodes[child], ray, oct_inv, t_min, limit, &prims);
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
                instance = top_instance_refs[index];
                let record = instances[instance];
                mesh = meshes[record.mesh];
                // A grid is walked at once; the loop stays in the top level.
                let walked = grid_instance(mesh, instance, record, origin, dir, t_min, any_hit, &limit, &best);
                if walked == GRID_FOUND {
                    return best;
                }
                if walked == GRID_WALKED {
                    continue;
                }
                cur_dir = rows_vector(record.world_to_object, dir);
                // Enter the instance; come back for the rest of the groups.
                if wide_has_children(group) {
                    wide_push(group);
                }
                if prims.y != 0u {
                    wide_push(prims);
                }
                wide_push(vec2<u32>(0u));
                ray = wide_ray(rows_point(record.world_to_object, origin), cur_dir);
                sheared = shear_ray(cur_dir);
                oct_inv = wide_octant_inv(cur_dir);
                in_object = true;
                group = vec2<u32>(0u, (1u << 31u) | (1u << (7u ^ oct_inv)));
                prims = vec2<u32>(0u);
                break;
            }
            let slot = mesh.prim_ref_offset + index;
            if test_reference(mesh, instance, prim_refs[slot], slot, ray.origin, cur_dir, sheared, t_min, any_hit, &limit, &best) {
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
                    ray = wide_ray(origin, dir);
                    cur_dir = dir;
                    oct_inv = wide_octant_inv(dir);
                    continue;
                }
                group = entry;
                break;
            }
        }
    }
    return best;
}
//!endif
