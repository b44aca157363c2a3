// Triangle kd-tree, small stage: one workgroup of KT_SMALL_NODE invocations per small root
// builds the root's SAH subtree as tri_kdtree.rs build_small does, word for word. Invocation t
// loads item t (the root's primitives ascending, their boxes clipped to its cell) and makes
// its six candidates' masks (axis a, side s at a * 2n + 2t + s: the CPU twin's order); at
// every node it measures its own item's candidates and the workgroup reduces them to the
// first of the cheapest. Invocation 0 keeps the stack (the node's mask, cell, depth and index
// in the subtree), depth first, the left child first, the children side by side at the end.
// With COUNT it writes each root's (nodes, references, depth below the root, leaves) and logs
// the decision at every node it visits (the candidate split at, or KT_LOG_LEAF; 16 bits each,
// in visiting order) into a pool shared by the roots, for small_replay.wgsl; a root whose
// subtree outgrows KT_LOG_CAP nodes, or finds no room left in the pool, is not logged. With
// WRITE (the roots not logged) the host has placed the subtrees (roots[r].place: the node
// index of the subtree's node 1 and the first reference, from the start of the references)
// and it writes the nodes' words and the leaves' references.
//!include "kdtree_tri/common.wgsl"

struct Task {
    mask: vec2<u32>,
    depth: u32,
    index: u32,
    lo: vec4<f32>,
    hi: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: KdBuildParams;
@group(0) @binding(1) var<storage, read> roots: array<SmallRoot>;
@group(0) @binding(2) var<storage, read> small_items: array<vec4<u32>>;
//!if COUNT
@group(0) @binding(3) var<storage, read_write> sizes: array<vec4<u32>>;
// Per root: (the log's first word, 1 when the root was logged).
@group(0) @binding(4) var<storage, read_write> logs: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> log_words: array<u32>;
// The pool's next free word (0 from the host; 1 when the pool is none, so nothing fits).
@group(0) @binding(6) var<storage, read_write> log_next: atomic<u32>;

// The most nodes a root's log holds (small_replay.wgsl), two a word.
const KT_LOG_CAP: u32 = 1024u;
var<workgroup> sh_log: array<u32, 512>;
var<workgroup> wg_log_at: u32;
//!endif
//!if WRITE
@group(0) @binding(3) var<storage, read_write> words: array<u32>;
//!endif

const KT_CANDIDATES: u32 = 384u;
const KT_NONE: u32 = 0xffffffffu;

var<workgroup> sh_lo: array<vec4<f32>, KT_SMALL_NODE>;
var<workgroup> sh_hi: array<vec4<f32>, KT_SMALL_NODE>;
var<workgroup> sh_prim: array<u32, KT_SMALL_NODE>;
var<workgroup> sh_plane: array<f32, KT_CANDIDATES>;
var<workgroup> sh_left: array<vec2<u32>, KT_CANDIDATES>;
var<workgroup> sh_right: array<vec2<u32>, KT_CANDIDATES>;
var<workgroup> sh_stack: array<Task, 66>;
var<workgroup> sh_cost: array<u32, KT_SMALL_NODE>;
var<workgroup> sh_k: array<u32, KT_SMALL_NODE>;
var<workgroup> wg_sp: u32;
// (nodes made, references made, deepest node below the root, leaves made)
var<workgroup> wg_state: vec4<u32>;
// (1 when the node just visited became a leaf, its first reference in the subtree)
var<workgroup> wg_leaf: vec2<u32>;

// tri_kdtree.rs sah_extent: 14 fractional bits of the scaled extent, in an integer.
fn kt_extent(e: f32, scale: f32) -> u32 {
    if !(e >= 1.17549435e-38) {
        return 0u;
    }
    return min(u32(floor(e * scale * 16384.0)), 32767u);
}

// The extents of the cell lo..hi, as tri_kdtree.rs sah_area takes them.
fn kt_extents(lo: vec3<f32>, hi: vec3<f32>, scale: f32) -> vec3<u32> {
    return vec3<u32>(kt_extent(hi.x - lo.x, scale), kt_extent(hi.y - lo.y, scale), kt_extent(hi.z - lo.z, scale));
}

// tri_kdtree.rs sah_area.
fn kt_area_of(e: vec3<u32>) -> u32 {
    return ((e.x * e.y) >> 7u) + ((e.y * e.z) >> 7u) + ((e.z * e.x) >> 7u);
}

// tri_kdtree.rs sah_scale.
fn kt_scale(lo: vec3<f32>, hi: vec3<f32>) -> f32 {
    let e = max(max(max(0.0, hi.x - lo.x), hi.y - lo.y), hi.z - lo.z);
    let exponent = (bitcast<u32>(e) >> 23u) & 0xffu;
    if exponent == 0u || exponent >= 254u {
        return 1.0;
    }
    return bitcast<f32>((254u - exponent) << 23u);
}

fn bit_of(mask: vec2<u32>, j: u32) -> u32 {
    return select(mask.y >> (j - 32u), mask.x >> j, j < 32u) & 1u;
}

fn popcount2(mask: vec2<u32>) -> u32 {
    return countOneBits(mask.x) + countOneBits(mask.y);
}

// Whether (cost_b, k_b) comes before (cost_a, k_a): a candidate before none, the cheaper, then
// the earlier.
fn better(cost_b: u32, k_b: u32, cost_a: u32, k_a: u32) -> bool {
    if k_b == KT_NONE {
        return false;
    }
    return k_a == KT_NONE || cost_b < cost_a || (cost_b == cost_a && k_b < k_a);
}

@compute @workgroup_size(KT_SMALL_NODE)
fn main(inputs: KtGroupInputs) {
    let t = inputs.lid;
    let r = inputs.wid.x + inputs.wid.y * inputs.nwg.x;
    if r >= params.roots {
        return;
    }
    let root = roots[r];
    let n = root.span.y;
    if t < n {
        let at = root.span.x + t;
        let lo = small_items[2u * at];
        let hi = small_items[2u * at + 1u];
        sh_lo[t] = vec4<f32>(bitcast<vec3<f32>>(lo.xyz), 0.0);
        sh_hi[t] = vec4<f32>(bitcast<vec3<f32>>(hi.xyz), 0.0);
        sh_prim[t] = lo.w;
    }
//!if COUNT
    for (var i = t; i < KT_LOG_CAP / 2u; i += KT_SMALL_NODE) {
        sh_log[i] = 0u;
    }
//!endif
    if t == 0u {
        let all = kt_all_items(n);
        sh_stack[0] = Task(all, root.span.z, 0u, root.lo, root.hi);
        wg_sp = 1u;
        wg_state = vec4<u32>(1u, 0u, 0u, 0u);
    }
    workgroupBarrier();
    // Invocation t makes item t's six candidates (axis a, side s: the plane of its box's low or
    // high side) and their masks, reading every item's box once.
    if t < n {
        let own_lo = sh_lo[t];
        let own_hi = sh_hi[t];
        var left = array<vec2<u32>, 6>();
        var right = array<vec2<u32>, 6>();
        for (var j = 0u; j < n; j++) {
            let lo = sh_lo[j];
            let hi = sh_hi[j];
            let word = select(1u, 0u, j < 32u);
            let bit = 1u << (j & 31u);
            for (var c = 0u; c < 6u; c++) {
                let a = c >> 1u;
                let plane = select(own_lo[a], own_hi[a], (c & 1u) == 1u);
                if lo[a] < plane {
                    left[c][word] |= bit;
                }
                if hi[a] > plane {
                    right[c][word] |= bit;
                }
            }
        }
        for (var c = 0u; c < 6u; c++) {
            let a = c >> 1u;
            let k = a * 2u * n + 2u * t + (c & 1u);
            sh_plane[k] = select(own_lo[a], own_hi[a], (c & 1u) == 1u);
            sh_left[k] = left[c];
            sh_right[k] = right[c];
        }
    }
    let scale = kt_scale(root.lo.xyz, root.hi.xyz);
    loop {
        let sp = workgroupUniformLoad(&wg_sp);
        if sp == 0u {
            break;
        }
        // Invocation 0 writes the stack only after the reduction's barrier below.
        let task = sh_stack[sp - 1u];
        let count = popcount2(task.mask);
        let extents = kt_extents(task.lo.xyz, task.hi.xyz, scale);
        let area = kt_area_of(extents);
        var best_cost = 0u;
        var best_k = KT_NONE;
        // Invocation t measures item t's candidates, in ascending k.
        if count > 0u && task.depth < KT_MAX_DEPTH && t < n && bit_of(task.mask, t) != 0u {
            for (var c = 0u; c < 6u; c++) {
                let a = c >> 1u;
                let k = a * 2u * n + 2u * t + (c & 1u);
                let plane = sh_plane[k];
                if !(task.lo[a] < plane && plane < task.hi[a]) {
                    continue;
                }
                // The children's cells differ from the node's on axis a only.
                var left_e = extents;
                left_e[a] = kt_extent(plane - task.lo[a], scale);
                var right_e = extents;
                right_e[a] = kt_extent(task.hi[a] - plane, scale);
                let nl = popcount2(task.mask & sh_left[k]);
                let nr = popcount2(task.mask & sh_right[k]);
                let cost = nl * kt_area_of(left_e) + nr * kt_area_of(right_e);
                if best_k == KT_NONE || cost < best_cost {
                    best_cost = cost;
                    best_k = k;
                }
            }
        }
//!if SUBGROUPS
        // The first of the cheapest in each subgroup (none: the largest key, which no cost
        // reaches), then invocation 0 takes the first of the subgroups' in turn.
        let key = select(best_cost, 0xffffffffu, best_k == KT_NONE);
        let low = subgroupMin(key);
        let low_k = subgroupMin(select(KT_NONE, best_k, key == low));
        if inputs.sg_lane == 0u {
            sh_cost[inputs.sg_id] = low;
            sh_k[inputs.sg_id] = low_k;
        }
        workgroupBarrier();
        if t == 0u {
            for (var g = 1u; g < inputs.num_sg; g++) {
                if better(sh_cost[g], sh_k[g], sh_cost[0], sh_k[0]) {
                    sh_cost[0] = sh_cost[g];
                    sh_k[0] = sh_k[g];
                }
            }
        }
//!else
        sh_cost[t] = best_cost;
        sh_k[t] = best_k;
        workgroupBarrier();
        for (var stride = KT_SMALL_NODE / 2u; stride > 0u; stride >>= 1u) {
            if t < stride && better(sh_cost[t + stride], sh_k[t + stride], sh_cost[t], sh_k[t]) {
                sh_cost[t] = sh_cost[t + stride];
                sh_k[t] = sh_k[t + stride];
            }
            workgroupBarrier();
        }
//!endif
        if t == 0u {
            var state = wg_state;
            state.z = max(state.z, task.depth - root.span.z);
            let k = sh_k[0];
            let place = select(root.place.x + task.index - 1u, root.span.w, task.index == 0u);
            let splits = k != KT_NONE && KT_TRAVERSAL_COST * area + sh_cost[0] < count * area;
//!if COUNT
            // The nodes visited before this one: those made, less the pending ones.
            let visit = state.x - sp;
            if visit < KT_LOG_CAP {
                sh_log[visit / 2u] |= select(KT_LOG_LEAF, k, splits) << (16u * (visit & 1u));
            }
//!endif
            if splits {
                let a = k / (2u * n);
                let plane = sh_plane[k];
                let left = state.x;
                state.x += 2u;
                var left_hi = task.hi;
                left_hi[a] = plane;
                var right_lo = task.lo;
                right_lo[a] = plane;
                sh_stack[sp - 1u] = Task(task.mask & sh_right[k], task.depth + 1u, left + 1u, right_lo, task.hi);
                sh_stack[sp] = Task(task.mask & sh_left[k], task.depth + 1u, left, task.lo, left_hi);
                wg_sp = sp + 1u;
                wg_leaf = vec2<u32>(0u, 0u);
//!if WRITE
                words[KT_HEADER_WORDS + 2u * place] = a << 30u | (root.place.x + left - 1u);
                words[KT_HEADER_WORDS + 2u * place + 1u] = bitcast<u32>(plane);
//!endif
            } else {
                wg_leaf = vec2<u32>(1u, state.y);
//!if WRITE
                words[KT_HEADER_WORDS + 2u * place] = KT_LEAF | (root.place.y + state.y);
                words[KT_HEADER_WORDS + 2u * place + 1u] = count;
//!endif
                state.y += count;
                state.w += 1u;
                wg_sp = sp - 1u;
            }
            wg_state = state;
        }
//!if WRITE
        workgroupBarrier();
        let leaf = wg_leaf;
        if leaf.x != 0u && t < n && bit_of(task.mask, t) != 0u {
            var below = vec2<u32>(0u);
            if t < 32u {
                below = vec2<u32>(task.mask.x & ((1u << t) - 1u), 0u);
            } else {
                below = vec2<u32>(task.mask.x, task.mask.y & ((1u << (t - 32u)) - 1u));
            }
            words[params.refs_at + root.place.y + leaf.y + popcount2(below)] = sh_prim[t];
        }
//!endif
    }
//!if COUNT
    let state = workgroupUniformLoad(&wg_state);
    if t == 0u {
        sizes[r] = state;
        wg_log_at = 0xffffffffu;
        if state.x <= KT_LOG_CAP {
            let need = (state.x + 1u) / 2u;
            let at = atomicAdd(&log_next, need);
            if at + need <= arrayLength(&log_words) {
                wg_log_at = at;
            }
        }
        logs[r] = select(vec2<u32>(wg_log_at, 1u), vec2<u32>(0u), wg_log_at == 0xffffffffu);
    }
    let at = workgroupUniformLoad(&wg_log_at);
    if at != 0xffffffffu {
        for (var i = t; i < (state.x + 1u) / 2u; i += KT_SMALL_NODE) {
            log_words[at + i] = sh_log[i];
        }
    }
//!endif
}
