// The triangle kd-tree's walk (paper 002's tree, `--accel kdtree`): the twin of
// src/accel/tri_kdtree.rs `walk`, step for step. Nearest child first by the side of the split
// plane the origin is on, with a short stack of KD_SHORT_STACK entries kept as a ring: when it
// overflows the farthest entry is dropped, and when it runs empty after a drop the walk
// restarts from the root at the far side of the last leaf. The words are tri_kdtree.rs's
// layout, from the mesh's node_offset in grid_cells. Every primitive's box was grown by the
// tree's margin, so the walk's rounding loses none.

// KD_HEADER_WORDS, KD_SHORT_STACK and KD_INDEX_MASK are in shared/scene.wgsl.

// Walks the kd-tree of `mesh` (an instance's, with its object-space ray) and tests the
// references of every leaf the ray passes with test_reference, until the closest hit so far
// lies before the leaf's far side or the ray leaves the root cell. Returns true when an any-hit
// search found its hit.
fn kdtree_walk(mesh: MeshRecord, instance: u32, o_origin: vec3<f32>, o_dir: vec3<f32>, sheared: ShearedRay, t_min: f32, any_hit: bool, limit: ptr<function, f32>, best: ptr<function, TraceHit>) -> bool {
    let base = mesh.node_offset;
    let lo = vec3<f32>(grid_f32(base, 0u), grid_f32(base, 1u), grid_f32(base, 2u));
    let hi = vec3<f32>(grid_f32(base, 3u), grid_f32(base, 4u), grid_f32(base, 5u));
    let nodes_at = base + KD_HEADER_WORDS;
    let refs_at = base + grid_cells[base + 8u];
    let inv = grid_guarded_inverse(o_dir);
    let t_lo = (lo - o_origin) * inv;
    let t_hi = (hi - o_origin) * inv;
    let t_enter = max(grid_max3(min(t_lo, t_hi)), t_min);
    let t_exit = min(grid_min3(max(t_lo, t_hi)), *limit);
    if !(t_enter <= t_exit) {
        return false;
    }
    var stack_node: array<u32, KD_SHORT_STACK>;
    var stack_tn: array<f32, KD_SHORT_STACK>;
    var stack_tf: array<f32, KD_SHORT_STACK>;
    var top = 0u;
    var at = 0u;
    var dropped = false;
    var node = 0u;
    var tn = t_enter;
    var tf = t_exit;
    loop {
        let w0 = grid_cells[nodes_at + 2u * node];
        let w1 = grid_cells[nodes_at + 2u * node + 1u];
        if (w0 >> 30u) != 3u {
            let a = w0 >> 30u;
            let plane = bitcast<f32>(w1);
            let left = w0 & KD_INDEX_MASK;
            let oa = o_origin[a];
            let da = o_dir[a];
            let left_first = oa < plane || (oa == plane && da <= 0.0);
            let near = select(left + 1u, left, left_first);
            let far = select(left, left + 1u, left_first);
            if da == 0.0 {
                node = near;
                continue;
            }
            let ts = (plane - oa) * inv[a];
            if ts <= 0.0 || ts >= tf {
                node = near;
            } else if ts <= tn {
                node = far;
            } else {
                stack_node[at] = far;
                stack_tn[at] = ts;
                stack_tf[at] = tf;
                at = (at + 1u) % KD_SHORT_STACK;
                if top == KD_SHORT_STACK {
                    dropped = true;
                } else {
                    top += 1u;
                }
                node = near;
                tf = ts;
            }
            continue;
        }
        let first = w0 & KD_INDEX_MASK;
        for (var k = first; k < first + w1; k++) {
            if test_reference(mesh, instance, grid_cells[refs_at + k], NONE, o_origin, o_dir, sheared, t_min, any_hit, limit, best) {
                return true;
            }
        }
        if *limit <= tf {
            return false;
        }
        if top > 0u {
            at = (at + KD_SHORT_STACK - 1u) % KD_SHORT_STACK;
            top -= 1u;
            node = stack_node[at];
            tn = stack_tn[at];
            tf = stack_tf[at];
        } else if dropped && tf < t_exit {
            dropped = false;
            node = 0u;
            tn = tf;
            tf = t_exit;
        } else {
            return false;
        }
    }
    return false;
}
