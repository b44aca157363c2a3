// benches/dispatch_overhead.rs: the smallest useful kernel, adding one to every word, so that a
// dispatch's cost is the dispatch itself (and the barrier before the next).
@group(0) @binding(0) var<storage, read_write> data: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x < arrayLength(&data) {
        data[id.x] += 1u;
    }
}
