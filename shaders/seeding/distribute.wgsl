// Adaptive seeding, step 6 (paper 003 listing 6.10), one dispatch per level from the root down,
// one invocation per node: the node's seeds split between its (at most four) children as
// cpu::gather::split_seeds does: every child first gets its minimum-density floor
// (density_floor of its point count), the rest goes in proportion to the children's errors by
// cpu::gather::apportion's integer rule (floors, then the largest remainders, ties to the lower
// child, until all is given), none more than its points.
//!include "seeding/common.wgsl"

@group(0) @binding(0) var<uniform> params: SeedParams;
@group(0) @binding(1) var<storage, read> node_range: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> node_children: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> node_errors: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> node_seeds: array<u32>;

// Rounds of apportion: each one hands out everything or fills a part, so four parts need at
// most four; the bound only keeps the loop finite.
const MAX_ROUNDS: u32 = 8u;

// cpu::gather::apportion over the first `parts` (at most four) 64-bit weights and caps.
fn apportion(total: u32, weights_in: array<vec2<u32>, 4>, caps_in: array<u32, 4>, parts: u32) -> array<u32, 4> {
    var weights = weights_in;
    var caps = caps_in;
    var total_weight = vec2<u32>(0u, 0u);
    for (var c = 0u; c < parts; c++) {
        total_weight = add64(total_weight, weights[c]);
    }
    // The fewest bits that bring the weights' sum below 2^31.
    let shift = max(bit_length64(total_weight), 31u) - 31u;
    var w: array<u32, 4>;
    for (var c = 0u; c < parts; c++) {
        w[c] = shr64(weights[c], shift).x;
    }
    var out = array<u32, 4>(0u, 0u, 0u, 0u);
    var left = total;
    var open = 0u;
    for (var c = 0u; c < parts; c++) {
        if caps[c] > 0u {
            open = open | (1u << c);
        }
    }
    for (var round = 0u; round < MAX_ROUNDS; round++) {
        if left == 0u || open == 0u {
            break;
        }
        var sum = 0u;
        for (var c = 0u; c < parts; c++) {
            if (open & (1u << c)) != 0u {
                sum = sum + w[c];
            }
        }
        let k = countOneBits(open);
        var rem: array<u32, 4>;
        var given = 0u;
        for (var c = 0u; c < parts; c++) {
            if (open & (1u << c)) == 0u {
                continue;
            }
            var whole = left / k;
            rem[c] = left % k;
            if sum > 0u {
                let share = div64(mul_wide(w[c], left), sum);
                whole = share.x;
                rem[c] = share.y;
            }
            let grant = min(whole, caps[c] - out[c]);
            out[c] = out[c] + grant;
            given = given + grant;
        }
        left = left - given;
        // The open parts by remainder, largest first, ties to the lower index.
        var taken = 0u;
        for (var step = 0u; step < 4u; step++) {
            if left == 0u {
                break;
            }
            var best = 4u;
            for (var c = 0u; c < parts; c++) {
                let bit = 1u << c;
                if (open & bit) != 0u && (taken & bit) == 0u && (best == 4u || rem[c] > rem[best]) {
                    best = c;
                }
            }
            if best == 4u {
                break;
            }
            taken = taken | (1u << best);
            if out[best] < caps[best] {
                out[best] = out[best] + 1u;
                left = left - 1u;
            }
        }
        for (var c = 0u; c < parts; c++) {
            if out[c] >= caps[c] {
                open = open & ~(1u << c);
            }
        }
    }
    return out;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = seed_index(gid, nwg);
    if j >= params.count {
        return;
    }
    let g = params.offset + j;
    let children = node_children[g];
    let parts = min(children.y - children.x, 4u);
    var errors: array<vec2<u32>, 4>;
    var floors: array<u32, 4>;
    var caps: array<u32, 4>;
    var floor_sum = 0u;
    for (var c = 0u; c < parts; c++) {
        errors[c] = node_errors[children.x + c];
        let range = node_range[children.x + c];
        caps[c] = range.y - range.x;
        floors[c] = min(density_floor(params.total, caps[c], params.n, params.min_density), caps[c]);
        floor_sum = floor_sum + floors[c];
    }
    let count = node_seeds[g];
    // The floors always fit (cpu::gather::seed_density_floor); were they not to, leave them out.
    if floor_sum > count {
        floors = array<u32, 4>(0u, 0u, 0u, 0u);
        floor_sum = 0u;
    }
    var room: array<u32, 4>;
    for (var c = 0u; c < parts; c++) {
        room[c] = caps[c] - floors[c];
    }
    var by_error = apportion(count - floor_sum, errors, room, parts);
    for (var c = 0u; c < parts; c++) {
        node_seeds[children.x + c] = floors[c] + by_error[c];
    }
}
