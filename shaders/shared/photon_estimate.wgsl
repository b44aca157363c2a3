// The photon density estimate over a photon kd-tree, and the octahedral direction code of a
// stored photon: the twin of src/accel/photon_estimate.rs (see its module comment for the
// estimate and the choice of radius). kd_points[i] is the position of kd_photons[i].
//!include "shared/math.wgsl"
//!include "shared/knn_heap.wgsl"
//!include "shared/knn.wgsl"
//!include "shared/photon_types.wgsl"

@group(0) @binding(52) var<storage, read> kd_photons: array<PhotonRecord>;

// EstimateFilter::code.
const ESTIMATE_FILTER_NONE: u32 = 0u;
const ESTIMATE_FILTER_CONE: u32 = 1u;
const ESTIMATE_FILTER_EPANECHNIKOV: u32 = 2u;

// std::f32::consts::PI, as its f32 bits.
const ESTIMATE_PI_BITS: u32 = 0x40490fdbu;
// photon_estimate::split3: v as three parts of at most 8 significant bits, summing exactly to v.
fn photon_split3(v: f32) -> vec3<f32> {
    let a = bitcast<f32>(bitcast<u32>(v) & 0xffff0000u);
    let rest = v - a;
    let b = bitcast<f32>(bitcast<u32>(rest) & 0xffff0000u);
    return vec3<f32>(a, b, rest - b);
}

// One axis of photon_estimate::arrives_in_front: exact products, summed in a fixed order.
fn photon_facing_term(n: f32, d: f32) -> f32 {
    let s = photon_split3(n);
    return (s.x * d + s.y * d) + s.z * d;
}

// photon_estimate::arrives_in_front: dot(n, direction) < 0 for an octahedral_decode_l1
// direction, the same on the CPU and the GPU whether or not multiply-adds are fused.
fn photon_arrives_in_front(n: vec3<f32>, direction: vec3<f32>) -> bool {
    return (photon_facing_term(n.x, direction.x) + photon_facing_term(n.y, direction.y)) + photon_facing_term(n.z, direction.z) < 0.0;
}

// photon_estimate::photon_flux_density: Σ w Φ / (norm · π r²) over the k nearest photons within
// max_dist2 that arrive on the side n faces, summed in the search's heap order as the CPU does.
// `filter_code` is an ESTIMATE_FILTER_* code and `cone_k` EstimateFilter::cone_k (>= 1).
fn photon_flux_density(x: vec3<f32>, n: vec3<f32>, k: u32, max_dist2: f32, filter_code: u32, cone_k: f32) -> vec3<f32> {
    let count = knn_search(x, k, max_dist2);
    if count == 0u {
        return vec3<f32>(0.0);
    }
    // The root of the max-heap is the farthest photon found.
    let farthest = knn_heap_dist(0u);
    var r2 = farthest;
    if count < knn_k && is_finite_f32(max_dist2) {
        r2 = max_dist2;
    }
    if !(r2 > 0.0) {
        return vec3<f32>(0.0);
    }
    let r = sqrt(r2);
    let cone_kr = cone_k * r;
    var sum = vec3<f32>(0.0);
    // With k found (k >= 2) the k-th photon, the root, sets the radius and lies on the disc's
    // edge: it is left out, so that the estimate is (k - 1)/(pi r^2) photons' power per area,
    // unbiased for a locally uniform density (accel::photon_estimate).
    var j = 0u;
    if count >= knn_k && count >= 2u {
        j = 1u;
    }
    let photon_count = arrayLength(&kd_photons);
    while j < count {
        // A point with no photon (a shorter photon array) counts as none, as on the CPU.
        let index = min(knn_heap_index(j), photon_count - 1u);
        let photon = kd_photons[index];
        if knn_heap_index(j) < photon_count && photon_arrives_in_front(n, octahedral_decode_l1(photon.direction)) {
            let d2 = knn_heap_dist(j);
            var w = 1.0;
            if filter_code == ESTIMATE_FILTER_CONE {
                w = 1.0 - sqrt(d2) / cone_kr;
            } else if filter_code == ESTIMATE_FILTER_EPANECHNIKOV {
                // (r2 − d2)/r2 rather than 1 − d2/r2: the farthest photon weighs exactly 0 even
                // where division is not correctly rounded (NVIDIA), as on the CPU.
                w = 2.0 * ((r2 - d2) / r2);
            }
            sum += w * photon.power;
        }
        j++;
    }
    if j < count {
        knn_error |= KNN_ERROR_LOOP_CUT;
    }
    var norm = 1.0;
    if filter_code == ESTIMATE_FILTER_CONE {
        norm = 1.0 - 2.0 / (3.0 * cone_k);
    }
    return sum / (norm * bitcast<f32>(ESTIMATE_PI_BITS) * r2);
}
