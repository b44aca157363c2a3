// The arguments of an indirect dispatch over a count the device holds: ceil(min(count, cap) /
// workgroup_size) workgroups, spilling into y past max_per_dim as Kernel::grid_for does (x =
// min(groups, max_per_dim), y = ceil(groups / max_per_dim)), none for a count of zero. The
// dispatched kernel still reads the count itself and recovers its index as
// gid.x + gid.y · num_workgroups.x · workgroup_size. One invocation. Twin of
// gpu::prims::dispatch_args_of.

// Twin of gpu::prims::DispatchArgsParams.
struct DispatchArgsParams {
    // The count's word in `counts`.
    count_word: u32,
    // The most items the kernel may take (its buffers' room).
    cap: u32,
    workgroup_size: u32,
    max_per_dim: u32,
}

@group(0) @binding(0) var<uniform> params: DispatchArgsParams;
@group(0) @binding(1) var<storage, read> counts: array<u32>;
// x, y, z.
@group(0) @binding(2) var<storage, read_write> args: array<u32>;

@compute @workgroup_size(1)
fn main() {
    var count = 0u;
    if params.count_word < arrayLength(&counts) {
        count = counts[params.count_word];
    }
    count = min(count, params.cap);
    let size = max(params.workgroup_size, 1u);
    let groups = count / size + select(0u, 1u, count % size != 0u);
    let most = max(params.max_per_dim, 1u);
    var x = groups;
    var y = 1u;
    if groups > most {
        x = most;
        y = groups / most + select(0u, 1u, groups % most != 0u);
    }
    if arrayLength(&args) >= 3u {
        args[0] = x;
        args[1] = y;
        args[2] = 1u;
    }
}
