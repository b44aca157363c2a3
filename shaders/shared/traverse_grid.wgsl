// The two-level grid's walk (paper 001 section 6): the twin of src/accel/grid.rs `walk`, step
// for step. A DDA through the top grid, and in every top cell that holds references a DDA
// through its leaves, in grid coordinates u = (p - min) · inv_size (top cells at integer u,
// leaf cells at multiples of 1/r inside them). The words are grid.rs's layout, from the mesh's
// node_offset in grid_cells. Every primitive's box was grown by the grid's margin before it was
// placed, so the walk's rounding loses none.

const GRID_HEADER_WORDS: u32 = 16u;

fn grid_f32(base: u32, i: u32) -> f32 {
    return bitcast<f32>(grid_cells[base + i]);
}

// grid.rs guarded_inverse (the wide layout's guard for components under 2^-80).
fn grid_guarded_inverse(v: vec3<f32>) -> vec3<f32> {
    let tiny = vec3<f32>(8.271806e-25);
    let d = select(v, select(tiny, -tiny, v < vec3<f32>(0.0)), abs(v) < tiny);
    return vec3<f32>(1.0) / d;
}

// grid.rs cell_of.
fn grid_cell_of(u: f32, res: u32) -> i32 {
    return i32(clamp(floor(u), 0.0, f32(res - 1u)));
}

// grid.rs nearest_axis.
fn grid_nearest_axis(next: vec3<f32>) -> u32 {
    if next.x <= next.y && next.x <= next.z {
        return 0u;
    }
    if next.y <= next.z {
        return 1u;
    }
    return 2u;
}

fn grid_min3(v: vec3<f32>) -> f32 {
    return min(min(v.x, v.y), v.z);
}

fn grid_max3(v: vec3<f32>) -> f32 {
    return max(max(v.x, v.y), v.z);
}

// Walks the grid of `mesh` (an instance's, with its object-space ray) and tests the references
// of every leaf the ray passes with test_reference, until the closest hit so far lies before the
// leaf's far side or the ray leaves the grid. Returns true when an any-hit search found its hit.
fn grid_walk(mesh: MeshRecord, instance: u32, o_origin: vec3<f32>, o_dir: vec3<f32>, sheared: ShearedRay, t_min: f32, any_hit: bool, limit: ptr<function, f32>, best: ptr<function, TraceHit>) -> bool {
    let base = mesh.node_offset;
    let gmin = vec3<f32>(grid_f32(base, 0u), grid_f32(base, 1u), grid_f32(base, 2u));
    let inv_size = vec3<f32>(grid_f32(base, 3u), grid_f32(base, 4u), grid_f32(base, 5u));
    let res = vec3<u32>(grid_cells[base + 6u], grid_cells[base + 7u], grid_cells[base + 8u]);
    let leaves_at = base + grid_cells[base + 12u];
    let refs_at = base + grid_cells[base + 13u];
    let resf = vec3<f32>(res);
    let uo = (o_origin - gmin) * inv_size;
    let ud = o_dir * inv_size;
    let inv = grid_guarded_inverse(ud);
    let t_lo = (vec3<f32>(0.0) - uo) * inv;
    let t_hi = (resf - uo) * inv;
    let t_enter = max(grid_max3(min(t_lo, t_hi)), t_min);
    let t_exit = min(grid_min3(max(t_lo, t_hi)), *limit);
    if !(t_enter <= t_exit) {
        return false;
    }
    let step = select(vec3<i32>(1), vec3<i32>(-1), ud < vec3<f32>(0.0));
    let up = vec3<i32>(select(vec3<u32>(0u), vec3<u32>(1u), step > vec3<i32>(0)));
    let u0 = uo + ud * t_enter;
    var cell = vec3<i32>(grid_cell_of(u0.x, res.x), grid_cell_of(u0.y, res.y), grid_cell_of(u0.z, res.z));
    var next = (vec3<f32>(cell + up) - uo) * inv;
    var t_cell = t_enter;
    loop {
        let exit = grid_min3(next);
        let index = u32(cell.x) + res.x * (u32(cell.y) + res.y * u32(cell.z));
        let first = grid_cells[base + GRID_HEADER_WORDS + 2u * index];
        let packed = grid_cells[base + GRID_HEADER_WORDS + 2u * index + 1u];
        if packed != 0u {
            let r = vec3<u32>(packed & 0xffu, (packed >> 8u) & 0xffu, packed >> 16u);
            let rf = vec3<f32>(r);
            let c = vec3<f32>(cell);
            let u = uo + ud * t_cell;
            let v = (u - c) * rf;
            var j = vec3<i32>(grid_cell_of(v.x, r.x), grid_cell_of(v.y, r.y), grid_cell_of(v.z, r.z));
            var leaf_next = (c + vec3<f32>(j + up) / rf - uo) * inv;
            // 0: on to the next top cell, 1: done, 2: an any-hit search's hit.
            var walked = 0u;
            loop {
                let leaf_exit = grid_min3(leaf_next);
                let leaf = first + u32(j.x) + r.x * (u32(j.y) + r.y * u32(j.z));
                let start = grid_cells[leaves_at + 2u * leaf];
                let end = grid_cells[leaves_at + 2u * leaf + 1u];
                for (var k = start; k < end; k++) {
                    if test_reference(mesh, instance, grid_cells[refs_at + k], NONE, o_origin, o_dir, sheared, t_min, any_hit, limit, best) {
                        return true;
                    }
                }
                if *limit <= leaf_exit {
                    walked = 1u;
                    break;
                }
                if leaf_exit >= exit {
                    break;
                }
                let a = grid_nearest_axis(leaf_next);
                j[a] += step[a];
                if j[a] < 0 || j[a] >= i32(r[a]) {
                    break;
                }
                leaf_next[a] = (c[a] + f32(j[a] + up[a]) / rf[a] - uo[a]) * inv[a];
            }
            if walked == 1u {
                return false;
            }
        }
        if *limit <= exit || exit >= t_exit {
            return false;
        }
        let a = grid_nearest_axis(next);
        cell[a] += step[a];
        if cell[a] < 0 || cell[a] >= i32(res[a]) {
            return false;
        }
        t_cell = exit;
        next[a] = (f32(cell[a] + up[a]) - uo[a]) * inv[a];
    }
    return false;
}

// traverse.wgsl grid_instance: walks the grid of an instance whose mesh is one (in world
// space: `origin`, `dir`): GRID_WALKED, or GRID_FOUND for an any-hit search's hit; GRID_NOT
// for a mesh of a tree, which the loop enters as usual.
// A MESH_KDTREE mesh is walked the same way, by kdtree_walk (shared/traverse_kdtree.wgsl).
fn grid_instance(mesh: MeshRecord, instance: u32, record: Instance, origin: vec3<f32>, dir: vec3<f32>, t_min: f32, any_hit: bool, limit: ptr<function, f32>, best: ptr<function, TraceHit>) -> u32 {
    if (mesh.flags & (MESH_GRID | MESH_KDTREE)) == 0u {
        return GRID_NOT;
    }
    let o_origin = rows_point(record.world_to_object, origin);
    let o_dir = rows_vector(record.world_to_object, dir);
    var found = false;
    if (mesh.flags & MESH_KDTREE) != 0u {
        found = kdtree_walk(mesh, instance, o_origin, o_dir, shear_ray(o_dir), t_min, any_hit, limit, best);
    } else {
        found = grid_walk(mesh, instance, o_origin, o_dir, shear_ray(o_dir), t_min, any_hit, limit, best);
    }
    if found {
        return GRID_FOUND;
    }
    return GRID_WALKED;
}
