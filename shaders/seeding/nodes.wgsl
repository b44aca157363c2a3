// Seeding kernels that walk the quadtree's levels: the level table and the nodes' point ranges
// (bindings 20 and 21 belong to this include), and the search for the node holding a point.
// Nodes are numbered level by level from the root (node 0); a level's nodes cover consecutive,
// non-empty ranges of the sorted points, in order.

// Per level 0..=levels: (first node, node count).
@group(0) @binding(20) var<storage, read> level_table: array<vec2<u32>>;
// Per node: (first sorted point, end).
@group(0) @binding(21) var<storage, read> node_range: array<vec2<u32>>;

// The node of `level` whose range holds sorted point `k`.
fn find_node(level: u32, k: u32) -> u32 {
    let table = level_table[level];
    var lo = 0u;
    var hi = table.y;
    while hi - lo > 1u {
        let mid = (lo + hi) / 2u;
        if node_range[table.x + mid].x <= k {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return table.x + lo;
}
