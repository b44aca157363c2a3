// Irradiance interpolation at one shading point per invocation: the GPU side of
// gpu::irradiance::IrradianceKernels::interpolate, twin of cpu::gather::IrradianceCache::irradiance.
//!include "shared/irradiance.wgsl"

// Twin of gpu::irradiance::IrradianceParams (size and offsets checked by a test).
struct IrradianceParams {
    query_count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

const WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<uniform> params: IrradianceParams;
// The shading points; this dispatch reads the first query_count.
@group(0) @binding(1) var<storage, read> queries: array<ShadingPoint>;
// The interpolated irradiance of each query (xyz, w = 0); NaN where its search reported an
// error, so that an unchecked failure cannot pass for light.
@group(0) @binding(2) var<storage, read_write> out_irradiance: array<vec4<f32>>;
// knn_error bits of every query, or-ed together.
@group(0) @binding(3) var<storage, read_write> status: array<atomic<u32>>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = gid.x + gid.y * nwg.x * WG_SIZE;
    if q >= params.query_count {
        return;
    }
    // Bounds of their own, so that the kernel may be compiled without naga's checks.
    if q >= arrayLength(&queries) || q >= arrayLength(&out_irradiance) {
        atomicOr(&status[0], KNN_ERROR_TREE);
        return;
    }
    let point = queries[q];
    let e = interpolate_irradiance(point.position, point.normal);
    if knn_error != 0u {
        atomicOr(&status[0], knn_error);
        out_irradiance[q] = vec4<f32>(bitcast<f32>(0x7fc00000u));
    } else {
        out_irradiance[q] = vec4<f32>(e, 0.0);
    }
}
