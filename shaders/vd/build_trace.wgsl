// The batched VD bottom level (paper 000 section 1.4.2, Algorithm 1): persistent workgroups
// take jobs (one patch and the sorted records of the rays that reach it) from a queue with an
// atomic counter; per job they choose the level (max over the rays' levels), build the patch's
// tree in their slice of the scratch buffer (grid points, leaves, inner levels from the leaves
// up with a barrier between levels), then trace every record's ray through it with the
// stackless link table and the leaves' triangles, and compete for each ray's closest hit with
// atomics. Twin of src/accel/vd_bottom.rs (PatchBvh::build and intersect); host side in
// src/gpu/vd_batch.rs, which documents the buffers.
//!include "vd/common.wgsl"

const WG: u32 = 64u;

@group(0) @binding(0) var<uniform> params: VdBatchParams;
@group(0) @binding(1) var<storage, read> patches: array<VdBatchPatch>;
@group(0) @binding(2) var<storage, read> maps: array<VdBatchMap>;
@group(0) @binding(3) var<storage, read> texels: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> rays: array<VdBatchRay>;
@group(0) @binding(5) var<storage, read> record_rays: array<u32>;
@group(0) @binding(6) var<storage, read> job_patches: array<u32>;
@group(0) @binding(7) var<storage, read> job_starts: array<u32>;
@group(0) @binding(8) var<storage, read> job_ends: array<u32>;
@group(0) @binding(9) var<storage, read> job_count: array<u32>;
@group(0) @binding(10) var<storage, read> links: array<u32>;
@group(0) @binding(11) var<storage, read_write> scratch: array<u32>;
@group(0) @binding(12) var<storage, read_write> job_counter: array<atomic<u32>>;
@group(0) @binding(13) var<storage, read_write> record_hits: array<VdRecordHit>;
@group(0) @binding(14) var<storage, read_write> job_levels: array<u32>;
//!if INT64_ATOMICS
// Per hit slot: (f32 bits of t) << 32 | record, one atomicMin.
@group(0) @binding(15) var<storage, read_write> hits: array<atomic<u64>>;
//!else
// Per hit slot: word 2s = record (resolve_hits.wgsl), word 2s+1 = f32 bits of t (atomicMin here).
@group(0) @binding(15) var<storage, read_write> hits: array<atomic<u32>>;
//!endif
// The frame's level of each patch: written here (mode bit 1 clear) or read (bit 1 set).
@group(0) @binding(16) var<storage, read_write> levels: array<u32>;
// Who defines each patch's boundary, and the level of every edge (vd/edge_levels.wgsl): the
// watertight rule of accel/vd_seams.rs.
@group(0) @binding(17) var<storage, read> seams: array<VdSeams>;
@group(0) @binding(18) var<storage, read> edge_levels: array<u32>;

var<workgroup> wg_job: u32;
var<workgroup> wg_level: atomic<u32>;
var<workgroup> wg_level_plain: u32;
// Order keys of the root box: min x y z, max x y z.
var<workgroup> wg_box: array<atomic<u32>, 6>;

// ---------------------------------------------------------------------------------------------
// The displaced surface (scene/vdmap.rs)
// ---------------------------------------------------------------------------------------------

fn lerp3(a: vec3<f32>, b: vec3<f32>, s: f32) -> vec3<f32> {
    return a * (1.0 - s) + b * s;
}

fn lerp2(a: vec2<f32>, b: vec2<f32>, s: f32) -> vec2<f32> {
    return a * (1.0 - s) + b * s;
}

fn texel(p: VdBatchPatch, x: u32, y: u32) -> vec3<f32> {
    return texels[p.tile_offset + y * p.tile_stride + x].xyz;
}

// VdWindow::sample: bilinear over the patch's window, clamp to its edges, v = 1 at its top row.
fn sample_window(p: VdBatchPatch, uv: vec2<f32>) -> vec3<f32> {
    let x = clamp(uv.x * f32(p.tile_width) - 0.5, 0.0, f32(p.tile_width - 1u));
    let y = clamp((1.0 - uv.y) * f32(p.tile_height) - 0.5, 0.0, f32(p.tile_height - 1u));
    let x0 = u32(floor(x));
    let y0 = u32(floor(y));
    let x1 = min(x0 + 1u, p.tile_width - 1u);
    let y1 = min(y0 + 1u, p.tile_height - 1u);
    let fx = x - f32(x0);
    let fy = y - f32(y0);
    let top = lerp3(texel(p, x0, y0), texel(p, x1, y0), fx);
    let bottom = lerp3(texel(p, x0, y1), texel(p, x1, y1), fx);
    return lerp3(top, bottom, fy);
}

// VdMap::remap.
fn remap(m: VdBatchMap, t: vec3<f32>) -> vec3<f32> {
    let v = vec3<f32>(t[m.channel_x], t[m.channel_y], t[m.channel_z]);
    return (v - vec3<f32>(m.midlevel)) * m.scale;
}

// VdSurface::displaced_point (no displacement where the map has no tile).
fn displaced_point(p: VdBatchPatch, m: VdBatchMap, s: f32, t: f32) -> vec3<f32> {
    let base = lerp3(lerp3(p.v0, p.v1, s), lerp3(p.v3, p.v2, s), t);
    if p.tile_width == 0u || p.tile_height == 0u {
        return base;
    }
    let uv = lerp2(lerp2(p.uv0, p.uv1, s), lerp2(p.uv3, p.uv2, s), t);
    let d = remap(m, sample_window(p, uv));
    if m.space == 0u {
        return base + d;
    }
    // patch_frame: N by the winding, T along increasing u (inverse UV Jacobian) made
    // orthogonal to N, B = N × T.
    let sc = clamp(s, 1e-3, 1.0 - 1e-3);
    let tc = clamp(t, 1e-3, 1.0 - 1e-3);
    let dqds = lerp3(p.v1 - p.v0, p.v2 - p.v3, tc);
    let dqdt = lerp3(p.v3 - p.v0, p.v2 - p.v1, sc);
    var tangent = vec3<f32>(1.0, 0.0, 0.0);
    var bitangent = vec3<f32>(0.0, 1.0, 0.0);
    var normal = vec3<f32>(0.0, 0.0, 1.0);
    let n = vd_cross(dqds, dqdt);
    if !(vd_length_squared(n) < 1e-30) {
        let nn = vd_normalize(n);
        let duvds = lerp2(p.uv1 - p.uv0, p.uv2 - p.uv3, tc);
        let duvdt = lerp2(p.uv3 - p.uv0, p.uv2 - p.uv1, sc);
        let det = duvds.x * duvdt.y - duvdt.x * duvds.y;
        var dqdu = dqds;
        if !(abs(det) < 1e-12 || !is_finite_f32(det)) {
            dqdu = (dqds * duvdt.y - dqdt * duvds.y) * (1.0 / det);
        }
        var tg = dqdu - nn * dot(nn, dqdu);
        if vd_length_squared(tg) < 1e-30 {
            tg = dqds - nn * dot(nn, dqds);
        }
        if !(vd_length_squared(tg) < 1e-30) {
            normal = nn;
            tangent = vd_normalize(tg);
            bitangent = vd_cross(normal, tangent);
        }
    }
    return base + tangent * d.x + bitangent * d.y + normal * d.z;
}

// ---------------------------------------------------------------------------------------------
// The shared boundary (accel/vd_seams.rs)
// ---------------------------------------------------------------------------------------------

// vd_seams::corner_st.
fn corner_st(c: u32) -> vec2<f32> {
    return vec2<f32>(select(0.0, 1.0, c == 1u || c == 2u), select(0.0, 1.0, c >= 2u));
}

// vd_seams::edge_st.
fn edge_st(e: u32, f: f32) -> vec2<f32> {
    switch e {
        case 0u: { return vec2<f32>(f, 0.0); }
        case 1u: { return vec2<f32>(1.0, f); }
        case 2u: { return vec2<f32>(f, 1.0); }
        default: { return vec2<f32>(0.0, f); }
    }
}

// vd_seams::EDGE_CORNERS[e][end].
fn edge_corner(e: u32, end: bool) -> u32 {
    switch e {
        case 0u: { return select(0u, 1u, end); }
        case 1u: { return select(1u, 2u, end); }
        case 2u: { return select(3u, 2u, end); }
        default: { return select(0u, 3u, end); }
    }
}

// Point k of 2^level along edge e of a patch with seams `seam`, on the surface of the patch
// that owns it (vd_seams::boundary_source, then VdMap::displaced_point of the owner). Every
// patch evaluates its boundary here, so shared points are the same bits on both sides.
fn boundary_point(seam: VdSeams, e: u32, k: u32, level: u32) -> vec3<f32> {
    let n = 1u << level;
    var owner = 0u;
    var st = vec2<f32>(0.0);
    if k == 0u || k == n {
        let code = seam.corner_owner[edge_corner(e, k == n)];
        owner = code >> 2u;
        st = corner_st(code & 3u);
    } else {
        let code = seam.edge_code[e];
        let along = select(k, n - k, (code & 4u) != 0u);
        owner = seam.edge_owner[e];
        st = edge_st(code & 3u, f32(along) / f32(n));
    }
    let q = patches[owner];
    return displaced_point(q, maps[q.map], st.x, st.y);
}

// ---------------------------------------------------------------------------------------------
// The slice: (2^L+1)² points of 3 words, then nodes of 5 words
// ---------------------------------------------------------------------------------------------

fn store_point(slice: u32, p: u32, v: vec3<f32>) {
    let o = slice + 3u * p;
    scratch[o] = bitcast<u32>(v.x);
    scratch[o + 1u] = bitcast<u32>(v.y);
    scratch[o + 2u] = bitcast<u32>(v.z);
}

fn load_point(slice: u32, p: u32) -> vec3<f32> {
    let o = slice + 3u * p;
    return vec3<f32>(bitcast<f32>(scratch[o]), bitcast<f32>(scratch[o + 1u]), bitcast<f32>(scratch[o + 2u]));
}

// Edge e's points start after the nodes, 2^max_level + 1 of them an edge, 3 words each.
fn edge_word(slice: u32, e: u32, k: u32) -> u32 {
    return slice + params.edge_words_offset + 3u * (e * ((1u << params.max_level) + 1u) + k);
}

fn store_edge_point(slice: u32, e: u32, k: u32, v: vec3<f32>) {
    let o = edge_word(slice, e, k);
    scratch[o] = bitcast<u32>(v.x);
    scratch[o + 1u] = bitcast<u32>(v.y);
    scratch[o + 2u] = bitcast<u32>(v.z);
}

fn load_edge_point(slice: u32, e: u32, k: u32) -> vec3<f32> {
    let o = edge_word(slice, e, k);
    return vec3<f32>(bitcast<f32>(scratch[o]), bitcast<f32>(scratch[o + 1u]), bitcast<f32>(scratch[o + 2u]));
}

// The run of edge e's points along cell (x, y) of a level-`level` grid when the cell lies on
// that edge and the edge is finer: (first point, points per cell side); (0, 0) otherwise.
fn cell_run(e: u32, x: u32, y: u32, level: u32, edge_level: u32) -> vec2<u32> {
    let n = 1u << level;
    // Edges 0 and 2 run along x (at y = 0 and y = n − 1), 1 and 3 along y (x = n − 1, 0).
    let along_x = (e & 1u) == 0u;
    let across = select(x, y, along_x);
    let at = select(0u, n - 1u, e == 1u || e == 2u);
    if across != at || edge_level <= level {
        return vec2<u32>(0u);
    }
    let r = 1u << (edge_level - level);
    return vec2<u32>(select(y, x, along_x) * r, r);
}

struct Node {
    qmin: vec3<u32>,
    qmax: vec3<u32>,
    normal: u32,
    st: u32,
}

fn store_node(slice: u32, k: u32, n: Node) {
    let o = slice + params.node_words_offset + 5u * k;
    scratch[o] = n.qmin.x | (n.qmin.y << 16u);
    scratch[o + 1u] = n.qmin.z | (n.qmax.x << 16u);
    scratch[o + 2u] = n.qmax.y | (n.qmax.z << 16u);
    scratch[o + 3u] = n.normal;
    scratch[o + 4u] = n.st;
}

fn load_node_box(slice: u32, k: u32) -> array<u32, 3> {
    let o = slice + params.node_words_offset + 5u * k;
    return array<u32, 3>(scratch[o], scratch[o + 1u], scratch[o + 2u]);
}

fn load_node(slice: u32, k: u32) -> Node {
    let o = slice + params.node_words_offset + 5u * k;
    let w0 = scratch[o];
    let w1 = scratch[o + 1u];
    let w2 = scratch[o + 2u];
    return Node(vec3<u32>(w0 & 0xffffu, w0 >> 16u, w1 & 0xffffu), vec3<u32>(w1 >> 16u, w2 & 0xffffu, w2 >> 16u),
        scratch[o + 3u], scratch[o + 4u]);
}

// The corners v00, v10, v11, v01 of cell (x, y).
fn cell_corners(slice: u32, row: u32, x: u32, y: u32) -> array<vec3<f32>, 4> {
    return array<vec3<f32>, 4>(load_point(slice, y * row + x), load_point(slice, y * row + x + 1u),
        load_point(slice, (y + 1u) * row + x + 1u), load_point(slice, (y + 1u) * row + x));
}

fn quantize_box(frame: VdFrame, lo: vec3<f32>, hi: vec3<f32>) -> Node {
    let qmin = vec3<u32>(vd_quantize_down(frame, 0u, lo.x), vd_quantize_down(frame, 1u, lo.y), vd_quantize_down(frame, 2u, lo.z));
    let qmax = vec3<u32>(vd_quantize_up(frame, 0u, hi.x), vd_quantize_up(frame, 1u, hi.y), vd_quantize_up(frame, 2u, hi.z));
    return Node(qmin, qmax, 0u, 0u);
}

struct Hit {
    hit: bool,
    t: f32,
    st: vec2<f32>,
    normal: vec3<f32>,
    cell: u32,
}

// The level of edge e of a patch at `level`: the edge's, at least the patch's.
fn edge_level(seam: VdSeams, e: u32, level: u32) -> u32 {
    return clamp(edge_levels[seam.edge_code[e] >> 3u], level, params.max_level);
}

// The levels of the four edges of patch p at `level`.
fn patch_edge_levels(p: u32, level: u32) -> vec4<u32> {
    let seam = seams[p];
    return vec4<u32>(edge_level(seam, 0u, level), edge_level(seam, 1u, level), edge_level(seam, 2u, level),
        edge_level(seam, 3u, level));
}

// The inner points each side of cell (x, y) adds to its outline (0 off the finer edges).
fn cell_inner_counts(level: u32, elev: vec4<u32>, x: u32, y: u32) -> vec4<u32> {
    var c = vec4<u32>(0u);
    for (var e = 0u; e < 4u; e++) {
        let run = cell_run(e, x, y, level, elev[e]);
        c[e] = select(0u, run.y - 1u, run.y > 1u);
    }
    return c;
}

struct OutlinePoint {
    p: vec3<f32>,
    st: vec2<f32>,
}

// Point i of cell (x, y)'s outline (PatchBvh::cell_outline): corner s (v00, v10, v11, v01 for
// s = 0..3) at index s + the inner points of the sides before it, followed by side s's inner
// points (sides 2 and 3 against their edges' direction).
fn outline_point(slice: u32, level: u32, elev: vec4<u32>, x: u32, y: u32, inner: vec4<u32>, i: u32) -> OutlinePoint {
    let n = 1u << level;
    let b1 = 1u + inner.x;
    let b2 = b1 + 1u + inner.y;
    let b3 = b2 + 1u + inner.z;
    var side = 0u;
    var begin = 0u;
    if i >= b3 {
        side = 3u;
        begin = b3;
    } else if i >= b2 {
        side = 2u;
        begin = b2;
    } else if i >= b1 {
        side = 1u;
        begin = b1;
    }
    let j = i - begin;
    if j == 0u {
        let ci = x + select(0u, 1u, side == 1u || side == 2u);
        let cj = y + select(0u, 1u, side >= 2u);
        return OutlinePoint(load_point(slice, cj * (n + 1u) + ci), vec2<f32>(f32(ci), f32(cj)) / f32(n));
    }
    let run = cell_run(side, x, y, level, elev[side]);
    let k = select(run.x + j, run.x + run.y - j, side >= 2u);
    return OutlinePoint(load_edge_point(slice, side, k), edge_st(side, f32(k) / f32(1u << elev[side])));
}

// PatchBvh::intersect_with_links: Listing 1.1 with the leaves' triangles. A plain leaf cell is
// the triangles (v00, v10, v11) then (v00, v11, v01); a cell along an edge finer than the patch
// is the fan from its centre (the mean of its corners) through its outline
// (PatchBvh::intersect_fan), its triangles taken one per step of the same loop as the nodes
// (one flat loop: Mesa 22's lavapipe miscompiled the fan as a loop nested inside this one).
fn intersect_patch(slice: u32, level: u32, elev: vec4<u32>, frame: VdFrame, origin: vec3<f32>, dir: vec3<f32>, t_min: f32, t_max: f32) -> Hit {
    let inv_dir = 1.0 / dir;
    let n = 1u << level;
    let first_leaf = vd_first_node_of_level(level);
    var best = Hit(false, 0.0, vec2<f32>(0.0), vec3<f32>(0.0), VD_NONE);
    var limit = t_max;
    var k = 0u;
    // The fan being tested: its cell (VD_NONE when none), next triangle, triangle count.
    var fan_cell = VD_NONE;
    var fan_i = 0u;
    var fan_count = 0u;
    var fan_xy = vec2<u32>(0u);
    var fan_inner = vec4<u32>(0u);
    var apex = vec3<f32>(0.0);
    var apex_st = vec2<f32>(0.0);
    while k != VD_LINK_END || fan_cell != VD_NONE {
        if fan_cell != VD_NONE {
            let a = outline_point(slice, level, elev, fan_xy.x, fan_xy.y, fan_inner, fan_i);
            let b = outline_point(slice, level, elev, fan_xy.x, fan_xy.y, fan_inner, (fan_i + 1u) % fan_count);
            let h = intersect_triangle(origin, dir, apex, a.p, b.p, t_min, limit);
            if h.hit {
                limit = h.t;
                best = Hit(true, h.t, apex_st * (1.0 - h.b1 - h.b2) + a.st * h.b1 + b.st * h.b2,
                    vd_normalize_or_zero(vd_cross(a.p - apex, b.p - apex)), fan_cell);
            }
            fan_i += 1u;
            if fan_i == fan_count {
                fan_cell = VD_NONE;
            }
            continue;
        }
        let w = load_node_box(slice, k);
        let qmin = vec3<f32>(f32(w[0] & 0xffffu), f32(w[0] >> 16u), f32(w[1] & 0xffffu));
        let qmax = vec3<f32>(f32(w[1] >> 16u), f32(w[2] & 0xffffu), f32(w[2] >> 16u));
        let lo = frame.origin + qmin * frame.step;
        let hi = frame.origin + qmax * frame.step;
        let link = links[k];
        if slab_entry(origin, inv_dir, lo, hi, t_min, limit) >= 0.0 {
            if k >= first_leaf {
                let m = k - first_leaf;
                let xy = morton_decode(m);
                let inner = cell_inner_counts(level, elev, xy.x, xy.y);
                let v = cell_corners(slice, n + 1u, xy.x, xy.y);
                if any(inner != vec4<u32>(0u)) {
                    fan_cell = m;
                    fan_i = 0u;
                    fan_count = 4u + inner.x + inner.y + inner.z + inner.w;
                    fan_xy = xy;
                    fan_inner = inner;
                    apex = (v[0] + v[1] + v[2] + v[3]) * 0.25;
                    apex_st = (vec2<f32>(f32(xy.x), f32(xy.y)) + vec2<f32>(0.5)) / f32(n);
                } else {
                    let cell = vec2<f32>(f32(xy.x), f32(xy.y));
                    let ha = intersect_triangle(origin, dir, v[0], v[1], v[2], t_min, limit);
                    if ha.hit {
                        limit = ha.t;
                        best = Hit(true, ha.t, (cell + vec2<f32>(ha.b1 + ha.b2, ha.b2)) / f32(n),
                            vd_normalize_or_zero(vd_cross(v[1] - v[0], v[2] - v[0])), m);
                    }
                    let hb = intersect_triangle(origin, dir, v[0], v[2], v[3], t_min, limit);
                    if hb.hit {
                        limit = hb.t;
                        best = Hit(true, hb.t, (cell + vec2<f32>(hb.b1, hb.b1 + hb.b2)) / f32(n),
                            vd_normalize_or_zero(vd_cross(v[2] - v[0], v[3] - v[0])), m);
                    }
                }
                k = link & VD_LINK_END;
            } else {
                k = 4u * (link >> 17u) + 1u;
            }
        } else {
            k = link & VD_LINK_END;
        }
    }
    return best;
}

// Adds an invocation's points' box to the job's root box (`wg_box`, as order keys).
fn add_to_root_box(lo: vec3<f32>, hi: vec3<f32>) {
    if lo.x <= hi.x {
        for (var a = 0u; a < 3u; a++) {
            atomicMin(&wg_box[a], vd_order_key(lo[a]));
            atomicMax(&wg_box[a + 3u], vd_order_key(hi[a]));
        }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let slice = wid.x * params.slice_words;
    loop {
        // Take the next job (Algorithm 1's "while unprocessed VD patch").
        if lid == 0u {
            let j = atomicAdd(&job_counter[0], 1u);
            wg_job = select(VD_NONE, j, j < job_count[0]);
            atomicStore(&wg_level, 0u);
            for (var a = 0u; a < 3u; a++) {
                atomicStore(&wg_box[a], 0xffffffffu);
                atomicStore(&wg_box[a + 3u], 0u);
            }
        }
        let job = workgroupUniformLoad(&wg_job);
        if job == VD_NONE {
            break;
        }
        let patch_index = job_patches[job];
        let start = job_starts[job];
        let end = job_ends[job];
        let vd = patches[patch_index];
        let map = maps[vd.map];
        let padding = max(map.padding, 0.0);

        // The level: the frame's (mode bit 1), or the max over the rays' levels (rays that miss
        // the bounds add none), which becomes the frame's.
        let choose = (params.mode & 2u) == 0u;
        if choose {
            for (var r = start + lid; r < end; r += WG) {
                let ray = rays[record_rays[r]];
                let entry = slab_entry(ray.origin, 1.0 / ray.dir, vd.bounds_min, vd.bounds_max, 0.0, ray.t_max);
                if entry >= 0.0 {
                    atomicMax(&wg_level, vd_lod_level(vd.bounds_min, vd.bounds_max, entry, ray.spread, params.max_level));
                }
            }
        }
        workgroupBarrier();
        if lid == 0u {
            var l = min(levels[patch_index], params.max_level);
            if choose {
                l = atomicLoad(&wg_level);
                levels[patch_index] = l;
            }
            wg_level_plain = l;
            job_levels[job] = l;
        }
        let level = workgroupUniformLoad(&wg_level_plain);
        if (params.mode & 4u) != 0u {
            // Levels only: the edge levels follow from them before any tree is built.
            workgroupBarrier();
            continue;
        }
        let n = 1u << level;
        let row = n + 1u;
        // The edge levels are read again after each barrier rather than held across them.

        // Loop 0: the points of the four edges at their levels, on their owners' surfaces.
        var lo = vec3<f32>(f32_infinity());
        var hi = vec3<f32>(-f32_infinity());
        let elev0 = patch_edge_levels(patch_index, level);
        for (var e = 0u; e < 4u; e++) {
            let count = (1u << elev0[e]) + 1u;
            for (var k = lid; k < count; k += WG) {
                let v = boundary_point(seams[patch_index], e, k, elev0[e]);
                store_edge_point(slice, e, k, v);
                lo = min(lo, v);
                hi = max(hi, v);
            }
        }
        // Into the root box before the barrier: Mesa 22's lavapipe runs another workgroup on the
        // thread while this one waits at a barrier, and a `var` held across it can come back
        // wrong (with workgroup 0 idle and one thread, the last job of each workgroup then had a
        // wrong root box, every run).
        add_to_root_box(lo, hi);
        workgroupBarrier();
        storageBarrier();
        // Loop 1: the displaced grid points, the boundary's from the edges; the root box is the
        // reduction of all of them.
        lo = vec3<f32>(f32_infinity());
        hi = vec3<f32>(-f32_infinity());
        let elev = patch_edge_levels(patch_index, level);
        let own = patches[patch_index];
        let own_map = maps[own.map];
        for (var p = lid; p < row * row; p += WG) {
            let i = p % row;
            let j = p / row;
            var v = vec3<f32>(0.0);
            if j == 0u {
                v = load_edge_point(slice, 0u, i << (elev[0] - level));
            } else if j == n {
                v = load_edge_point(slice, 2u, i << (elev[2] - level));
            } else if i == 0u {
                v = load_edge_point(slice, 3u, j << (elev[3] - level));
            } else if i == n {
                v = load_edge_point(slice, 1u, j << (elev[1] - level));
            } else {
                v = displaced_point(own, own_map, f32(i) / f32(n), f32(j) / f32(n));
            }
            store_point(slice, p, v);
            lo = min(lo, v);
            hi = max(hi, v);
        }
        add_to_root_box(lo, hi);
        workgroupBarrier();
        storageBarrier();
        let root_min = vec3<f32>(vd_from_order_key(atomicLoad(&wg_box[0])), vd_from_order_key(atomicLoad(&wg_box[1])),
            vd_from_order_key(atomicLoad(&wg_box[2]))) - vec3<f32>(padding);
        let root_max = vec3<f32>(vd_from_order_key(atomicLoad(&wg_box[3])), vd_from_order_key(atomicLoad(&wg_box[4])),
            vd_from_order_key(atomicLoad(&wg_box[5]))) + vec3<f32>(padding);
        let frame = vd_frame_new(root_min, root_max);

        // Loop 2: the leaves, in Morton order.
        let first_leaf = vd_first_node_of_level(level);
        let elev2 = patch_edge_levels(patch_index, level);
        for (var m = lid; m < n * n; m += WG) {
            let xy = morton_decode(m);
            let v = cell_corners(slice, row, xy.x, xy.y);
            var blo = min(min(v[0], v[1]), min(v[2], v[3]));
            var bhi = max(max(v[0], v[1]), max(v[2], v[3]));
            // The extra points of finer edges along the cell.
            for (var e = 0u; e < 4u; e++) {
                let run = cell_run(e, xy.x, xy.y, level, elev2[e]);
                for (var k = run.x + 1u; k < run.x + run.y; k++) {
                    let q = load_edge_point(slice, e, k);
                    blo = min(blo, q);
                    bhi = max(bhi, q);
                }
            }
            var node = quantize_box(frame, blo - vec3<f32>(padding), bhi + vec3<f32>(padding));
            node.normal = vd_oct_encode(vd_cross(v[2] - v[0], v[3] - v[1]));
            node.st = vd_pack_unorm16x2((vec2<f32>(f32(xy.x), f32(xy.y)) + vec2<f32>(0.5)) / f32(n));
            store_node(slice, first_leaf + m, node);
        }
        // Loops 3: the inner levels from the leaves up, a barrier before each.
        for (var l = level; l > 0u; l--) {
            workgroupBarrier();
            storageBarrier();
            let first = vd_first_node_of_level(l - 1u);
            let count = 1u << (2u * (l - 1u));
            for (var i = lid; i < count; i += WG) {
                let k = first + i;
                var qmin = vec3<u32>(0xffffu);
                var qmax = vec3<u32>(0u);
                var normal = vec3<f32>(0.0);
                var st = vec2<f32>(0.0);
                for (var c = 1u; c <= 4u; c++) {
                    let child = load_node(slice, 4u * k + c);
                    qmin = min(qmin, child.qmin);
                    qmax = max(qmax, child.qmax);
                    normal += vd_oct_decode(child.normal);
                    st += vd_unpack_unorm16x2(child.st);
                }
                store_node(slice, k, Node(qmin, qmax, vd_oct_encode(normal), vd_pack_unorm16x2(st * 0.25)));
            }
        }
        workgroupBarrier();
        storageBarrier();

        // Trace every record of the job through the tree.
        if (params.mode & 1u) != 0u {
            let elev3 = patch_edge_levels(patch_index, level);
            for (var r = start + lid; r < end; r += WG) {
                let ray = rays[record_rays[r]];
                let h = intersect_patch(slice, level, elev3, frame, ray.origin, ray.dir, 0.0, ray.t_max);
                if h.hit {
                    record_hits[r] = VdRecordHit(h.normal, h.t, h.st, h.cell, patch_index);
                    let tbits = bitcast<u32>(h.t);
                    //!if INT64_ATOMICS
                    atomicMin(&hits[ray.hit], (u64(tbits) << 32u) | u64(r));
                    //!else
                    atomicMin(&hits[2u * ray.hit + 1u], tbits);
                    //!endif
                } else {
                    record_hits[r] = VdRecordHit(vec3<f32>(0.0), f32_infinity(), vec2<f32>(0.0), VD_NONE, patch_index);
                }
            }
        }
        // Everyone is done with the slice and the shared job before the next one.
        workgroupBarrier();
        storageBarrier();
    }
}
