// Triangle kd-tree, small stage, the words of the subtrees whose decisions small.wgsl (COUNT)
// logged: one invocation per small root replays its log. The log holds, for every node of the
// subtree in the order the build visited them (depth first, the left child first), the
// candidate it split at (k = a * 2n + 2i + side: item i's low or high side on axis a) or
// KT_LOG_LEAF. The replay walks the same stack, so it makes the nodes in the same order and
// writes the words small.wgsl (WRITE) writes, without measuring any candidate again: a node's
// plane is its item's side, and its children's masks are the items of its mask that start
// before the plane and that end after it. Roots without a log (too many nodes, or no room
// left in the pool) are skipped here and written by small.wgsl (WRITE).
//!include "kdtree_tri/common.wgsl"

@group(0) @binding(0) var<uniform> params: KdBuildParams;
@group(0) @binding(1) var<storage, read> roots: array<SmallRoot>;
@group(0) @binding(2) var<storage, read> small_items: array<vec4<u32>>;
// Per root: (the log's first word, 1 when the root was logged).
@group(0) @binding(3) var<storage, read> logs: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read> log_words: array<u32>;
@group(0) @binding(5) var<storage, read_write> words: array<u32>;

const KT_REPLAY_WG: u32 = 64u;

// A pending node: its mask of the root's items, and its index in the subtree.
struct Pending {
    mask: vec2<u32>,
    index: u32,
}

@compute @workgroup_size(KT_REPLAY_WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = gid.x + gid.y * nwg.x * KT_REPLAY_WG;
    if r >= params.roots || logs[r].y == 0u {
        return;
    }
    let root = roots[r];
    let first = root.span.x;
    let n = root.span.y;
    let all = kt_all_items(n);
    var stack: array<Pending, 66>;
    stack[0] = Pending(all, 0u);
    var sp = 1u;
    // Nodes made and references made, as small.wgsl counts them.
    var made = 1u;
    var refs = 0u;
    var entry = 0u;
    let log_at = logs[r].x;
    loop {
        if sp == 0u {
            break;
        }
        let task = stack[sp - 1u];
        let k = (log_words[log_at + entry / 2u] >> (16u * (entry & 1u))) & 0xffffu;
        entry += 1u;
        let place = select(root.place.x + task.index - 1u, root.span.w, task.index == 0u);
        if k != KT_LOG_LEAF {
            let a = k / (2u * n);
            let i = (k - a * 2u * n) / 2u;
            let side = k & 1u;
            let plane = bitcast<f32>(small_items[2u * (first + i) + side][a]);
            var left = vec2<u32>(0u);
            var right = vec2<u32>(0u);
            for (var w = 0u; w < 2u; w++) {
                var bits = task.mask[w];
                while bits != 0u {
                    let b = countTrailingZeros(bits);
                    bits &= bits - 1u;
                    let j = 32u * w + b;
                    if bitcast<f32>(small_items[2u * (first + j)][a]) < plane {
                        left[w] |= 1u << b;
                    }
                    if bitcast<f32>(small_items[2u * (first + j) + 1u][a]) > plane {
                        right[w] |= 1u << b;
                    }
                }
            }
            let l = made;
            made += 2u;
            stack[sp - 1u] = Pending(right, l + 1u);
            stack[sp] = Pending(left, l);
            sp += 1u;
            words[KT_HEADER_WORDS + 2u * place] = a << 30u | (root.place.x + l - 1u);
            words[KT_HEADER_WORDS + 2u * place + 1u] = bitcast<u32>(plane);
        } else {
            let count = countOneBits(task.mask.x) + countOneBits(task.mask.y);
            words[KT_HEADER_WORDS + 2u * place] = KT_LEAF | (root.place.y + refs);
            words[KT_HEADER_WORDS + 2u * place + 1u] = count;
            var at = params.refs_at + root.place.y + refs;
            for (var w = 0u; w < 2u; w++) {
                var bits = task.mask[w];
                while bits != 0u {
                    let b = countTrailingZeros(bits);
                    bits &= bits - 1u;
                    words[at] = small_items[2u * (first + 32u * w + b)].w;
                    at += 1u;
                }
            }
            refs += count;
            sp -= 1u;
        }
    }
}
