// Shared by the PLOC kernels (bvh/ploc_*.wgsl; host side caustica::gpu::ploc, CPU twin
// caustica::accel::ploc): the parameters, the state words, the clusters' boxes and the rules
// by which a cluster picks its neighbour and a round keeps, merges or drops a cluster.
//!include "bvh/lbvh_common.wgsl"

// Invocations per workgroup of every PLOC kernel but the scan, and so clusters per block.
const PLOC_WG_SIZE: u32 = 256u;
// Clusters searched on either side (caustica::accel::ploc::PLOC_RADIUS).
const PLOC_RADIUS: u32 = 16u;

// Twin of caustica::gpu::ploc::PlocParams (layout checked by a test).
struct PlocParams {
    // Primitives.
    n: u32,
    // Rounds that search (caustica::accel::ploc::ploc_natural_rounds(n)); later ones pair.
    natural_rounds: u32,
    // The most workgroups a round's dispatches take (they loop over the blocks beyond).
    max_groups: u32,
    // Every round, searching and paired (caustica::accel::ploc::ploc_rounds(n)): the tree is
    // at most this deep, leaves included, less one.
    rounds: u32,
}

// State words: the round under way (the scan advances it), then per round r the clusters it
// starts with and the next internal node's number (counting down) at STATE_ROUNDS + 2r.
const STATE_ROUND: u32 = 0u;
const STATE_ROUNDS: u32 = 4u;

// A round's clusters are two arrays in position order: their nodes (array<u32>) and their
// boxes, two vec4<u32> of float bits each (lo.xyz and the primitive count; hi.xyz and 0).

fn blocks_of(clusters: u32) -> u32 {
    return (clusters + PLOC_WG_SIZE - 1u) / PLOC_WG_SIZE;
}

// The distance of two clusters: collapse_area of their exact union as a total-order key, every
// NaN the largest key and areas below the smallest normal float 0. Twin of
// caustica::accel::ploc::ploc_distance.
fn ploc_distance(a: BoxWords, b: BoxWords) -> i32 {
    let u = union_words(a, b);
    let area = collapse_area(bitcast<vec3<f32>>(u.lo), bitcast<vec3<f32>>(u.hi));
    let bits = bitcast<u32>(area) & 0x7fffffffu;
    if bits > 0x7f800000u {
        return 0x7fffffff;
    }
    if bits < 0x00800000u {
        return 0;
    }
    return total_key(area);
}

// Whether candidate j (distance dj) is nearer to cluster i than candidate k (distance dk):
// the distance, then being i's partner i ^ 1, then the nearer position, then the lower one.
// Twin of candidate_key in caustica::accel::ploc.
fn ploc_nearer(i: u32, j: u32, dj: i32, k: u32, dk: i32) -> bool {
    if dj != dk {
        return dj < dk;
    }
    let pj = j == (i ^ 1u);
    let pk = k == (i ^ 1u);
    if pj != pk {
        return pj;
    }
    let aj = max(i, j) - min(i, j);
    let ak = max(i, k) - min(i, k);
    if aj != ak {
        return aj < ak;
    }
    return j < k;
}

// What a round does with cluster i < count, by the nearest neighbours: x = 1 when the cluster
// stays (alone, or merged with a later mutual neighbour into a new node in its place), y = 1
// when it is such a merge. A cluster whose mutual neighbour comes before it is dropped.
fn ploc_fate(i: u32, j: u32, nj: u32) -> vec2<u32> {
    let mutual = j != i && nj == i;
    let dropped = mutual && j < i;
    return vec2<u32>(select(1u, 0u, dropped), select(0u, 1u, mutual && i < j));
}
