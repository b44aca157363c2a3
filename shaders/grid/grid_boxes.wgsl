// Two-level grid, step 1: for box i < boxes, whether it is placed (finite and not empty, as
// caustica::accel::grid::placeable says) and its grid box (GridParams::grid_box:
// (b.min - margin - min) * inv_size, (b.max + margin - min) * inv_size), stored as bits with
// w = 1 when placed, and the number of top cells it overlaps (the volume of
// GridParams::top_range; 0 when not placed), added to the exact total.
//!include "grid/total.wgsl"

@group(0) @binding(0) var<uniform> params: GridBuildParams;
// Two a box, as bits: lo.xyz, hi.xyz (w ignored).
@group(0) @binding(1) var<storage, read> boxes: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> grid_boxes: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> counts: array<u32>;

fn finite(bits: vec3<u32>) -> bool {
    return all((bits & vec3<u32>(0x7f800000u)) != vec3<u32>(0x7f800000u));
}

// a > b for finite floats, on their bits (so that subnormals compare as on the host): the
// order of f32::total_cmp, in which -0 < +0, but those two equal.
fn greater(a: u32, b: u32) -> bool {
    let ka = a ^ select(0x80000000u, 0xffffffffu, (a & 0x80000000u) != 0u);
    let kb = b ^ select(0x80000000u, 0xffffffffu, (b & 0x80000000u) != 0u);
    return ka > kb && ((a | b) & 0x7fffffffu) != 0u;
}

@compute @workgroup_size(GRID_WG_SIZE)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = grid_index(gid, nwg);
    var count = 0u;
    if i < params.boxes {
        let lo_bits = boxes[2u * i].xyz;
        let hi_bits = boxes[2u * i + 1u].xyz;
        let empty = greater(lo_bits.x, hi_bits.x) || greater(lo_bits.y, hi_bits.y)
            || greater(lo_bits.z, hi_bits.z);
        let placed = finite(lo_bits) && finite(hi_bits) && !empty;
        let margin = params.min.w;
        let lo = (bitcast<vec3<f32>>(lo_bits) - vec3<f32>(margin) - params.min.xyz)
            * params.inv_size.xyz;
        let hi = (bitcast<vec3<f32>>(hi_bits) + vec3<f32>(margin) - params.min.xyz)
            * params.inv_size.xyz;
        grid_boxes[2u * i] = vec4<u32>(bitcast<vec3<u32>>(lo), u32(placed));
        grid_boxes[2u * i + 1u] = vec4<u32>(bitcast<vec3<u32>>(hi), 0u);
        if placed {
            let res = params.res.xyz;
            count = range_volume(cells_of(lo, res), cells_of(hi, res));
        }
        counts[i] = count;
    }
    add_to_total(count, lid);
}
