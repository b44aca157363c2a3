// The environment light's map: twins of src/scene/environment.rs (lat_long_uv,
// lat_long_direction, EnvMap::lookup, EnvMap::sample) over the map's place in the texel array
// (gpu::upload::environment_texels): width × height texels (rgb radiance, w the row's
// conditional CDF) from `offset`, then one per row (w the marginal CDF).
//!include "shared/shading.wgsl"

const ENV_PI: f32 = 3.14159265358979323846;

struct EnvMapRef {
    offset: u32,
    width: u32,
    height: u32,
}

// The environment light record's map.
fn env_map_of(light: Light) -> EnvMapRef {
    return EnvMapRef(light.first, max(light.count, 1u), max(light._pad.x, 1u));
}

// Map space of a world direction: the dot products with the map-to-world columns.
fn env_to_map(light: Light, d: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(dot3(light.direction.xyz, d), dot3(light.edge_v.xyz, d), dot3(light.normal.xyz, d));
}

// World space of a map direction.
fn env_to_world(light: Light, m: vec3<f32>) -> vec3<f32> {
    return light.direction.xyz * m.x + light.edge_v.xyz * m.y + light.normal.xyz * m.z;
}

// lat_long_uv.
fn env_uv(d: vec3<f32>) -> vec2<f32> {
    var u = atan2(d.x, -d.z) * (0.5 / ENV_PI);
    if u < 0.0 {
        u += 1.0;
    }
    return vec2<f32>(u, acos(clamp(d.y, -1.0, 1.0)) / ENV_PI);
}

// lat_long_direction.
fn env_direction(uv: vec2<f32>) -> vec3<f32> {
    let phi = 2.0 * ENV_PI * uv.x;
    let theta = ENV_PI * uv.y;
    let sin_theta = sin(theta);
    return vec3<f32>(sin(phi) * sin_theta, cos(theta), -cos(phi) * sin_theta);
}

fn env_texel(m: EnvMapRef, x: i32, y: i32) -> vec3<f32> {
    let w = i32(m.width);
    let xi = ((x % w) + w) % w;
    let yi = clamp(y, 0, i32(m.height) - 1);
    return texels[m.offset + u32(yi) * m.width + u32(xi)].xyz;
}

// EnvMap::lookup: bilinear between texel centres, wrapping in u, clamped in v.
fn env_lookup(m: EnvMapRef, d: vec3<f32>) -> vec3<f32> {
    let uv = env_uv(d);
    let c = texel_corner(uv.x * f32(m.width), uv.y * f32(m.height));
    let top = lerp3(env_texel(m, c.x, c.y), env_texel(m, c.x + 1, c.y), c.fx);
    let bottom = lerp3(env_texel(m, c.x, c.y + 1), env_texel(m, c.x + 1, c.y + 1), c.fx);
    return lerp3(top, bottom, c.fy);
}

// Radiance arriving from world direction `d` of environment light `light` (its scale included).
fn env_radiance(light: Light, d: vec3<f32>) -> vec3<f32> {
    return env_lookup(env_map_of(light), env_to_map(light, d)) * light.color.xyz;
}

struct EnvPick {
    index: u32,
    x: f32,
}

// scene::pick_by_cdf over the w components of texels first .. first + count.
fn env_pick(first: u32, count: u32, u: f32) -> EnvPick {
    var lo = 0u;
    var hi = count - 1u;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if texels[first + mid].w <= u {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    var below = 0.0;
    if lo > 0u {
        below = texels[first + lo - 1u].w;
    }
    let width = texels[first + lo].w - below;
    var x = 0.5;
    if width > 0.0 {
        x = clamp((u - below) / width, 0.0, 1.0);
    }
    return EnvPick(lo, x);
}

// A chosen map-space direction and its density per unit solid angle (0: none).
struct EnvDirection {
    dir: vec3<f32>,
    pdf: f32,
}

// EnvMap::sample.
fn env_sample(m: EnvMapRef, u: vec2<f32>) -> EnvDirection {
    let none = EnvDirection(vec3<f32>(0.0, 1.0, 0.0), 0.0);
    let marginal = m.offset + m.width * m.height;
    if !(texels[marginal + m.height - 1u].w > 0.0) {
        return none;
    }
    let row = env_pick(marginal, m.height, u.y);
    let y = row.index;
    let column = env_pick(m.offset + y * m.width, m.width, u.x);
    let x = column.index;
    let p = env_texel_probability(m, x, y);
    let uv = vec2<f32>((f32(x) + column.x) / f32(m.width), (f32(y) + row.x) / f32(m.height));
    let sin_theta = sin(ENV_PI * uv.y);
    if !(p > 0.0 && sin_theta > 0.0) {
        return none;
    }
    let pdf = p * f32(m.width * m.height) / (2.0 * ENV_PI * ENV_PI * sin_theta);
    return EnvDirection(env_direction(uv), pdf);
}

// EnvMap::texel_probability: texel (x, y)'s share, from the CDFs.
fn env_texel_probability(m: EnvMapRef, x: u32, y: u32) -> f32 {
    let marginal = m.offset + m.width * m.height;
    var row = texels[marginal + y].w;
    if y > 0u {
        row -= texels[marginal + y - 1u].w;
    }
    let base = m.offset + y * m.width;
    var column = texels[base + x].w;
    if x > 0u {
        column -= texels[base + x - 1u].w;
    }
    return row * column;
}

// EnvMap::pdf: the density per unit solid angle with which env_sample chooses unit map-space
// direction d.
fn env_pdf(m: EnvMapRef, d: vec3<f32>) -> f32 {
    let marginal = m.offset + m.width * m.height;
    if !(texels[marginal + m.height - 1u].w > 0.0) {
        return 0.0;
    }
    let uv = env_uv(d);
    let x = min(u32(uv.x * f32(m.width)), m.width - 1u);
    let y = min(u32(uv.y * f32(m.height)), m.height - 1u);
    let sin_theta = sin(ENV_PI * uv.y);
    if sin_theta <= 0.0 {
        return 0.0;
    }
    return env_texel_probability(m, x, y) * f32(m.width * m.height) / (2.0 * ENV_PI * ENV_PI * sin_theta);
}
