// After a bounce's photons are stored (photons/store.wgsl): the map's cursor moves past them,
// whether or not they fitted, so that it ends as the number of photons the map needs
// (saturating at the largest u32).

@group(0) @binding(0) var<storage, read> selected_count: array<u32>;
@group(0) @binding(1) var<storage, read_write> map_cursor: array<u32>;

@compute @workgroup_size(1)
fn main() {
    let sum = map_cursor[0] + selected_count[0];
    if sum < map_cursor[0] {
        map_cursor[0] = 0xffffffffu;
    } else {
        map_cursor[0] = sum;
    }
}
