// Binned SAH, first step: one invocation per position and per accumulator word. Position i < n
// gets the identity order (the SAH; the hybrid's order is the Morton sort's) and the root's
// large task 0 when the root is large; every accumulator word of the large tasks starts at its
// identity; invocation 0 writes the state and lists the root as a large or a small task. Twin:
// the start of caustica::accel::sah_build::build_sah.
//!include "bvh/sah_common.wgsl"

@group(0) @binding(0) var<uniform> params: SahParams;
@group(0) @binding(1) var<storage, read_write> state: array<u32>;
@group(0) @binding(2) var<storage, read_write> order: array<u32>;
@group(0) @binding(3) var<storage, read_write> task_of: array<u32>;
@group(0) @binding(4) var<storage, read_write> acc: array<u32>;
@group(0) @binding(5) var<storage, read_write> tasks: array<SahTask>;
@group(0) @binding(6) var<storage, read_write> small: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read_write> nodes: array<BinaryNodeWords>;

@compute @workgroup_size(SAH_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = sah_index(gid, nwg, SAH_WG_SIZE);
    let n = params.n;
    let large = n > SAH_SMALL;
    if i < n {
        if params.hybrid == 0u {
            order[i] = i;
        }
        task_of[i] = select(SAH_NONE, 0u, large);
    }
    if i < params.task_capacity * ACC_WORDS {
        acc[i] = acc_identity(i % ACC_WORDS);
    }
    if i == 0u {
        let words = arrayLength(&state);
        for (var w = 0u; w < words; w++) {
            state[w] = 0u;
        }
        if large {
            state[STATE_COUNTS] = 1u;
            tasks[0] = SahTask(0u, n, 0u, SAH_NONE, 0u, 0u, MODE_SAH, 0u, 0u, 0u, SAH_NONE, SAH_NONE, 0u, 0u, 0u, 0u);
        } else if n >= 2u {
            state[STATE_SMALL] = 1u;
            small[0] = vec4<u32>(0u, n, 0u, SAH_NO_PARENT);
        } else if n == 1u {
            nodes[0].parent = BVH_NO_NODE;
        }
    }
}
