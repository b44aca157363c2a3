// Irradiance interpolation from the irradiance samples' kd-tree: the twin of
// cpu::gather::IrradianceCache::irradiance (render::gather::interpolate_irradiance over the
// INTERPOLATION_NEIGHBOURS nearest samples, no radius). See the module docs of
// src/render/gather.rs for the weights and the fallback, and of src/gpu/irradiance.rs for the
// bindings. kd_words / kd_points (bindings 50, 51 of shared/knn.wgsl) are the tree over the
// samples' positions: kd_points[i] must be irradiance_samples[i].position.
//!include "shared/knn.wgsl"
//!include "shared/gather_types.wgsl"

@group(0) @binding(53) var<storage, read> irradiance_samples: array<IrradianceSample>;

// render::gather::INTERPOLATION_NEIGHBOURS and INTERPOLATION_ACCURACY.
const INTERPOLATION_NEIGHBOURS: u32 = 12u;
const INTERPOLATION_ACCURACY: f32 = 0.5;
// The search's heap (shared/knn.wgsl): INTERPOLATION_NEIGHBOURS entries, whose last (index 11)
// is 3 moves below the root.
const KNN_HEAP_SIZE: u32 = INTERPOLATION_NEIGHBOURS;
const KNN_HEAP_DEPTH: u32 = 3u;
// Two points of a leaf per iteration, the queue offered every 4 iterations (shared/knn.wgsl,
// knn_enqueue): measured faster on the lent H100 than offering four at once.
const KNN_LEAF_CHUNK: u32 = 2u;
const KNN_FLUSH_EVERY: u32 = 4u;
// A knn_error bit of this include: the tree named a point with no irradiance sample.
const IRRADIANCE_ERROR_SAMPLES: u32 = 8u;

// render::gather::exact_dot: a·b from exact partial products (knn_split's 12-bit halves) summed
// in a fixed order, so that contracting p·q + r into a fused multiply-add cannot change it.
fn irradiance_dot(a: vec3<f32>, b: vec3<f32>) -> f32 {
    let ax = knn_split(a.x);
    let ay = knn_split(a.y);
    let az = knn_split(a.z);
    let bx = knn_split(b.x);
    let by = knn_split(b.y);
    let bz = knn_split(b.z);
    let high = (ax.x * bx.x + ay.x * by.x) + az.x * bz.x;
    let middle = ((ax.x * bx.y + ax.y * bx.x) + (ay.x * by.y + ay.y * by.x)) + (az.x * bz.y + az.y * bz.x);
    let low = (ax.y * bx.y + ay.y * by.y) + az.y * bz.y;
    return high + (middle + low);
}

// render::gather::ward_error of sample `s` at squared distance `dist2` (knn_distance2, the same
// bits as accel::knn::squared_distance) for the normal `n`.
fn irradiance_ward_error(s: IrradianceSample, dist2: f32, n: vec3<f32>) -> f32 {
    return sqrt(dist2) / max(s.radius, 1e-12) + sqrt(max(1.0 - irradiance_dot(n, s.normal), 0.0));
}

// render::gather::extrapolated_irradiance: sample s's irradiance moved along its gradient to x,
// at least zero per channel.
fn extrapolated_irradiance(s: IrradianceSample, x: vec3<f32>) -> vec3<f32> {
    let d = x - s.position;
    let moved = vec3<f32>(dot(d, s.gradient[0].xyz), dot(d, s.gradient[1].xyz), dot(d, s.gradient[2].xyz));
    return max(s.irradiance + moved, vec3<f32>(0.0));
}

// The interpolated irradiance at x with normal n: the INTERPOLATION_NEIGHBOURS nearest samples
// in ascending (distance, index) order, those with Ward's error below INTERPOLATION_ACCURACY
// weighted 1 - ε/a; without any, those facing n's side weighted 1/(ε + 1e-3); without those
// either, zero. The caller reports knn_error (the search's bits and IRRADIANCE_ERROR_SAMPLES).
// Both loops run a constant number of steps (unrolled: no back edges for lavapipe's loop budget).
fn interpolate_irradiance(x: vec3<f32>, n: vec3<f32>) -> vec3<f32> {
    // No radius: max_dist2 = +inf, as f32::INFINITY on the CPU.
    let count = knn_search(x, INTERPOLATION_NEIGHBOURS, bitcast<f32>(0x7f800000u));
    knn_sort_heap(count);
    let sample_count = arrayLength(&irradiance_samples);
    var errors: array<f32, INTERPOLATION_NEIGHBOURS>;
    var sum = vec3<f32>(0.0);
    var total = 0.0;
    for (var j = 0u; j < INTERPOLATION_NEIGHBOURS; j++) {
        if j < count {
            let i = knn_heap_index(j);
            if i < sample_count {
                let s = irradiance_samples[i];
                let e = irradiance_ward_error(s, knn_heap_dist(j), n);
                errors[j] = e;
                if e < INTERPOLATION_ACCURACY {
                    let w = 1.0 - e / INTERPOLATION_ACCURACY;
                    sum += extrapolated_irradiance(s, x) * w;
                    total += w;
                }
            } else {
                knn_error |= IRRADIANCE_ERROR_SAMPLES;
            }
        }
    }
    if total > 0.0 {
        return sum / total;
    }
    for (var j = 0u; j < INTERPOLATION_NEIGHBOURS; j++) {
        if j < count {
            let i = knn_heap_index(j);
            if i < sample_count {
                let s = irradiance_samples[i];
                if irradiance_dot(n, s.normal) > 0.0 {
                    let w = 1.0 / (errors[j] + 1e-3);
                    sum += extrapolated_irradiance(s, x) * w;
                    total += w;
                }
            }
        }
    }
    if total > 0.0 {
        return sum / total;
    }
    return vec3<f32>(0.0);
}
