// An experiment of the ray benchmark (bench/trace_rays.wgsl with LEAN and WIDE_BVH): the wide
// layout's loop of shared/traverse_wide.wgsl over the mesh of the top level's first instance
// alone, in world space, with none of the top level's state. Right only for a scene whose top
// level holds one instance without a transform (the raybench scenes: the dragon, and Sponza's
// parts merged into one tree); it measures what the fused top level costs a ray. With
// FAST_TRI its triangles take the plain Möller-Trumbore test instead of the watertight one (not
// the CPU's: the agreement column shows what that changes), to measure what the test costs.

//!if FAST_TRI
fn lean_triangle(origin: vec3<f32>, dir: vec3<f32>, slot: u32, t_min: f32, t_max: f32) -> TriangleHit {
    let b = 3u * slot;
    let v0 = leaf_triangles[b].xyz;
    let e1 = leaf_triangles[b + 1u].xyz - v0;
    let e2 = leaf_triangles[b + 2u].xyz - v0;
    let pv = cross(dir, e2);
    let det = dot(e1, pv);
    if abs(det) < 1e-30 {
        return TriangleHit(false, 0.0, 0.0, 0.0);
    }
    let inv = 1.0 / det;
    let tv = origin - v0;
    let u = dot(tv, pv) * inv;
    let qv = cross(tv, e1);
    let v = dot(dir, qv) * inv;
    let t = dot(e2, qv) * inv;
    return TriangleHit(u >= 0.0 && v >= 0.0 && u + v <= 1.0 && t > t_min && t < t_max, t, u, v);
}
//!endif

fn trace_ray_lean(origin: vec3<f32>, dir: vec3<f32>, t_min: f32, t_max: f32, any_hit: bool) -> TraceHit {
    var best = TraceHit(f32_infinity(), NONE, NONE, vec2<f32>(0.0));
    let instance = top_instance_refs[0];
    let mesh = meshes[instances[instance].mesh];
    if mesh.node_count == 0u {
        return best;
    }
    var limit = t_max;
    let ray = wide_ray(origin, dir);
    let sheared = shear_ray(dir);
    let oct_inv = wide_octant_inv(dir);
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
            //!if FAST_TRI
            let h = lean_triangle(origin, dir, slot, t_min, limit);
            if h.hit {
                var owner = vec2<u32>(instance, prim_refs[slot]);
                if (mesh.flags & MESH_MERGED) != 0u {
                    let member = merged_prims[mesh.vd_patch_offset + owner.y];
                    owner = vec2<u32>(merged_members[instances[instance].members + member.x], member.y);
                }
                if any_hit {
                    return TraceHit(h.t, owner.x, owner.y, vec2<f32>(h.b1, h.b2));
                }
                limit = h.t;
                best = TraceHit(h.t, owner.x, owner.y, vec2<f32>(h.b1, h.b2));
            }
            continue;
            //!endif
            if test_reference(mesh, instance, prim_refs[slot], slot, origin, dir, sheared, t_min, any_hit, &limit, &best) {
                return best;
            }
        }
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
