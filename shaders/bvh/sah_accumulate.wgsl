// The accumulators of the per-position kernels that add into their large task's words
// (bvh/sah_bounds.wgsl, bvh/sah_bins.wgsl), each of which sets ACC_SPAN (the words it adds
// into, from ACC_FIRST) before including this. The positions of a task are consecutive, so
// most of a workgroup's positions belong to the task of its first or of its last position:
// those add into workgroup memory first and each such word goes out in one atomic; the rest add
// straight into the task's words. Minima, maxima and sums are order-independent, so the words
// are the same bits whatever order the atomics meet in.

@group(0) @binding(0) var<uniform> params: SahParams;
@group(0) @binding(1) var<storage, read> order: array<u32>;
@group(0) @binding(2) var<storage, read> task_of: array<u32>;
@group(0) @binding(3) var<storage, read> boxes: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> acc: array<atomic<u32>>;

var<workgroup> wg_task: array<u32, 2>;
var<workgroup> wg_acc: array<atomic<u32>, 2u * ACC_SPAN>;

// Whether word `word` (from ACC_FIRST) is a bin's count (else a minimum or a maximum of keys).
fn is_count(word: u32) -> bool {
    let w = ACC_FIRST + word;
    return w >= ACC_BOUNDS && ((w - ACC_BOUNDS) % BIN_WORDS) == 0u;
}

// Adds `value` into word `word` (from ACC_FIRST) of task `t`, through workgroup memory when
// `t` is one of the workgroup's two.
fn add_word(t: u32, word: u32, value: u32) {
    var slot = 2u;
    if t == wg_task[0] {
        slot = 0u;
    } else if t == wg_task[1] {
        slot = 1u;
    }
    let kind = acc_identity(ACC_FIRST + word);
    if slot < 2u {
        let p = &wg_acc[slot * ACC_SPAN + word];
        if is_count(word) {
            atomicAdd(p, value);
        } else if kind != 0u {
            atomicMin(p, value);
        } else {
            atomicMax(p, value);
        }
    } else {
        let p = &acc[t * ACC_WORDS + ACC_FIRST + word];
        if is_count(word) {
            atomicAdd(p, value);
        } else if kind != 0u {
            atomicMin(p, value);
        } else {
            atomicMax(p, value);
        }
    }
}

// Before the positions add: the workgroup's two tasks and its words at their identities.
fn start_workgroup(first: u32, lid: u32) {
    for (var w = lid; w < 2u * ACC_SPAN; w += SAH_WG_SIZE) {
        atomicStore(&wg_acc[w], acc_identity(ACC_FIRST + w % ACC_SPAN));
    }
    if lid == 0u {
        let n = params.n;
        if first < n {
            wg_task[0] = task_of[first];
            wg_task[1] = task_of[min(first + SAH_WG_SIZE - 1u, n - 1u)];
        } else {
            wg_task[0] = SAH_NONE;
            wg_task[1] = SAH_NONE;
        }
    }
    workgroupBarrier();
}

// After the positions added: the workgroup's words that moved from their identity go out.
fn finish_workgroup(lid: u32) {
    workgroupBarrier();
    for (var w = lid; w < 2u * ACC_SPAN; w += SAH_WG_SIZE) {
        let slot = w / ACC_SPAN;
        let word = w % ACC_SPAN;
        let t = wg_task[slot];
        if t == SAH_NONE || (slot == 1u && t == wg_task[0]) {
            continue;
        }
        let v = atomicLoad(&wg_acc[w]);
        let identity = acc_identity(ACC_FIRST + word);
        if v == identity {
            continue;
        }
        let p = &acc[t * ACC_WORDS + ACC_FIRST + word];
        if is_count(word) {
            atomicAdd(p, v);
        } else if identity != 0u {
            atomicMin(p, v);
        } else {
            atomicMax(p, v);
        }
    }
}
