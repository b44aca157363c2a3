// The camera model and sample positions: twins of src/render/camera.rs (CameraModel::generate_ray,
// concentric_disk) and src/render/sampling.rs (stratified_sample), same evaluation order.
//!include "shared/types.wgsl"

// glam's Vec3::dot order: x, then y, then z.
fn dot3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

// glam's normalize: v · (1 / length).
fn normalize3(v: vec3<f32>) -> vec3<f32> {
    return v * (1.0 / sqrt(dot3(v, v)));
}

// glam's normalize_or: the fallback when 1 / length is not a positive finite number.
fn normalize_or(v: vec3<f32>, fallback: vec3<f32>) -> vec3<f32> {
    let rcp = 1.0 / sqrt(dot3(v, v));
    if abs(rcp) <= 3.40282347e38 && rcp > 0.0 {
        return v * rcp;
    }
    return fallback;
}

// Twin of render::sampling::stratified_sample: ⌊√count⌋ rows, the samples dealt to them as
// evenly as possible, every cell of area 1/count.
fn stratified_sample(index: u32, count_in: u32, jitter: vec2<f32>) -> vec2<f32> {
    let count = max(count_in, 1u);
    let rows = integer_sqrt(count);
    let base = count / rows;
    let extra = count % rows;
    let long = extra * (base + 1u);
    var row_start: u32;
    var cells: u32;
    if index < long {
        row_start = index / (base + 1u) * (base + 1u);
        cells = base + 1u;
    } else {
        row_start = long + (index - long) / base * base;
        cells = base;
    }
    let col = index - row_start;
    return vec2<f32>(
        (f32(col) + jitter.x) / f32(cells),
        (f32(row_start) + f32(cells) * jitter.y) / f32(count),
    );
}

// Twin of scene::triangle_point: the point of triangle p0, p0 + e1, p0 + e2 for the uniform
// numbers u (uniform in area).
fn triangle_point(p0: vec3<f32>, e1: vec3<f32>, e2: vec3<f32>, u: vec2<f32>) -> vec3<f32> {
    let root = sqrt(u.x);
    return p0 + e1 * (u.y * root) + e2 * (root * (1.0 - u.y));
}

// render::photons::orthonormal_basis (Duff et al.).
fn orthonormal_basis_t(n: vec3<f32>) -> vec3<f32> {
    let sign = select(-1.0, 1.0, n.z >= 0.0);
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    return vec3<f32>(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x);
}

fn orthonormal_basis_b(n: vec3<f32>) -> vec3<f32> {
    let sign = select(-1.0, 1.0, n.z >= 0.0);
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    return vec3<f32>(b, sign + n.y * n.y * a, -n.y);
}

// render::photons::cone_direction.
fn cone_direction(axis: vec3<f32>, cos_max: f32, u: vec2<f32>) -> vec3<f32> {
    let c = 1.0 - u.x * (1.0 - cos_max);
    let s = sqrt(max(1.0 - c * c, 0.0));
    // 2π as render::photons::cone_direction computes it in f32.
    let phi = 2.0 * 3.14159265358979 * u.y;
    return orthonormal_basis_t(axis) * (s * cos(phi)) + orthonormal_basis_b(axis) * (s * sin(phi)) + axis * c;
}

fn integer_sqrt(n: u32) -> u32 {
    var r = u32(sqrt(f32(n)));
    while r > 1u && r * r > n {
        r -= 1u;
    }
    while r < 0xffffu && (r + 1u) * (r + 1u) <= n {
        r += 1u;
    }
    return max(r, 1u);
}

fn concentric_disk(u: vec2<f32>) -> vec2<f32> {
    let o = u * 2.0 - vec2<f32>(1.0);
    if o.x == 0.0 && o.y == 0.0 {
        return vec2<f32>(0.0);
    }
    let quarter_pi = 0.7853981633974483;
    var r: f32;
    var theta: f32;
    if abs(o.x) > abs(o.y) {
        r = o.x;
        theta = quarter_pi * (o.y / o.x);
    } else {
        r = o.y;
        theta = 1.5707963267948966 - quarter_pi * (o.x / o.y);
    }
    return vec2<f32>(cos(theta), sin(theta)) * r;
}

struct CameraRay {
    origin: vec3<f32>,
    dir: vec3<f32>,
}

fn generate_ray(p: FrameParams, pixel: vec2<f32>, lens: vec2<f32>) -> CameraRay {
    let ndc_x = pixel.x / f32(p.width) * 2.0 - 1.0;
    let ndc_y = 1.0 - pixel.y / f32(p.height) * 2.0;
    let dir = normalize3(p.forward.xyz + p.right.xyz * (ndc_x * p.right.w) + p.up.xyz * (ndc_y * p.up.w));
    let lens_radius = p.origin.w;
    if lens_radius <= 0.0 {
        return CameraRay(p.origin.xyz, dir);
    }
    let focus_point = p.origin.xyz + dir * (p.forward.w / dot3(dir, p.forward.xyz));
    let disk = concentric_disk(lens) * lens_radius;
    let origin = p.origin.xyz + p.right.xyz * disk.x + p.up.xyz * disk.y;
    return CameraRay(origin, normalize3(focus_point - origin));
}
