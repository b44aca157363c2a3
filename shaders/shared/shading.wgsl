// Surface points, materials and specular directions: twins of Prepared::surface_point
// (src/accel/prepared.rs), TextureImage::sample (src/scene/mod.rs) and the optics of
// src/cpu/optics.rs (reflect, refract, dielectric_split, the Fresnel terms, face_forward,
// offset_origin), formula for formula.
//!include "shared/intersect.wgsl"
//!include "shared/camera.wgsl"
//!include "vd/common.wgsl"

// glam's Vec3::cross order.
fn cross3(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(a.y * b.z - b.y * a.z, a.z * b.x - b.z * a.x, a.x * b.y - b.x * a.y);
}

// glam's lerp: a·(1 − s) + b·s.
fn lerp3(a: vec3<f32>, b: vec3<f32>, s: f32) -> vec3<f32> {
    return a * (1.0 - s) + b * s;
}

fn lerp2(a: vec2<f32>, b: vec2<f32>, s: f32) -> vec2<f32> {
    return a * (1.0 - s) + b * s;
}

fn is_finite3(v: vec3<f32>) -> bool {
    return is_finite_f32(v.x) && is_finite_f32(v.y) && is_finite_f32(v.z);
}

struct SurfacePoint {
    position: vec3<f32>,
    geometric_normal: vec3<f32>,
    shading_normal: vec3<f32>,
    uv: vec2<f32>,
    material: u32,
}

struct HalfPoint {
    position: vec3<f32>,
    normal: vec3<f32>,
}

// primitives.rs quad_half_at.
fn quad_half_at(v0: vec3<f32>, v1: vec3<f32>, v2: vec3<f32>, v3: vec3<f32>, st: vec2<f32>) -> HalfPoint {
    if st.x >= st.y {
        let b1 = st.x - st.y;
        let b2 = st.y;
        return HalfPoint(v0 + (v1 - v0) * b1 + (v2 - v0) * b2, cross3(v1 - v0, v2 - v0));
    }
    let b1 = st.x;
    let b2 = st.y - st.x;
    return HalfPoint(v0 + (v2 - v0) * b1 + (v3 - v0) * b2, cross3(v2 - v0, v3 - v0));
}

fn normal_of(v: u32) -> vec3<f32> {
    return normals[v].xyz;
}

// Prepared::surface_point.
fn surface_point(ray_origin: vec3<f32>, ray_dir: vec3<f32>, hit: Hit) -> SurfacePoint {
    let record = instances[hit.instance];
    let mesh = meshes[record.mesh];
    let has_normals = (mesh.flags & MESH_HAS_NORMALS) != 0u;
    let has_uvs = (mesh.flags & MESH_HAS_UVS) != 0u;
    var position: vec3<f32>;
    var geometric: vec3<f32>;
    var shading = vec3<f32>(0.0);
    var has_shading = false;
    var uv: vec2<f32>;
    if hit.prim < mesh.triangle_count {
        let t = triangles[mesh.triangle_offset + hit.prim];
        let b1 = hit.st.x;
        let b2 = hit.st.y;
        let b0 = 1.0 - b1 - b2;
        let p0 = position_of(t.x);
        let p1 = position_of(t.y);
        let p2 = position_of(t.z);
        position = p0 * b0 + p1 * b1 + p2 * b2;
        geometric = cross3(p1 - p0, p2 - p0);
        if has_normals {
            shading = normal_of(t.x) * b0 + normal_of(t.y) * b1 + normal_of(t.z) * b2;
            has_shading = true;
        }
        if has_uvs {
            uv = uvs[t.x] * b0 + uvs[t.y] * b1 + uvs[t.z] * b2;
        } else {
            uv = hit.st;
        }
    } else {
        let q = hit.prim - mesh.triangle_count;
        let v = quads[mesh.quad_offset + q];
        var c0 = vec2<f32>(0.0, 0.0);
        var c1 = vec2<f32>(1.0, 0.0);
        var c2 = vec2<f32>(1.0, 1.0);
        var c3 = vec2<f32>(0.0, 1.0);
        if has_uvs {
            c0 = uvs[v.x];
            c1 = uvs[v.y];
            c2 = uvs[v.z];
            c3 = uvs[v.w];
        }
        uv = lerp2(lerp2(c0, c1, hit.st.x), lerp2(c3, c2, hit.st.x), hit.st.y);
        if (mesh.flags & MESH_SPHERE) != 0u {
            // The exact sphere: the hit point moved onto it, its normal the radius.
            let radius = positions[mesh.vertex_offset].x;
            let o = rows_point(record.world_to_object, ray_origin);
            let d = rows_vector(record.world_to_object, ray_dir);
            let n = normalize_or(o + d * hit.t, vec3<f32>(0.0, 1.0, 0.0));
            position = n * radius;
            geometric = n;
            shading = n;
            has_shading = true;
            uv = sphere_uv(n);
        } else if (mesh.flags & MESH_DISPLACED) != 0u {
            // The tessellation's triangle: the hit point on the ray and its normal.
            let o = rows_point(record.world_to_object, ray_origin);
            let d = rows_vector(record.world_to_object, ray_dir);
            position = o + d * hit.t;
            geometric = vd_oct_decode(hit.normal);
        } else {
            let h = quad_half_at(position_of(v.x), position_of(v.y), position_of(v.z), position_of(v.w), hit.st);
            position = h.position;
            geometric = h.normal;
            if has_normals {
                let s = hit.st.x;
                shading = lerp3(lerp3(normal_of(v.x), normal_of(v.y), s), lerp3(normal_of(v.w), normal_of(v.z), s), hit.st.y);
                has_shading = true;
            }
        }
    }
    var geometric_normal = normalize_or(rows_transpose_vector(record.world_to_object, geometric), vec3<f32>(0.0));
    if all(geometric_normal == vec3<f32>(0.0)) || !is_finite3(geometric_normal) {
        geometric_normal = normalize_or(-ray_dir, vec3<f32>(0.0, 0.0, 1.0));
    }
    var shading_normal = geometric_normal;
    if has_shading {
        let n = normalize_or(rows_transpose_vector(record.world_to_object, shading), vec3<f32>(0.0));
        if !all(n == vec3<f32>(0.0)) && is_finite3(n) {
            shading_normal = n;
            if dot3(n, geometric_normal) < 0.0 {
                shading_normal = -n;
            }
        }
    }
    return SurfacePoint(rows_point(record.object_to_world, position), geometric_normal, shading_normal, uv, record.material);
}

// A bilinear lookup's first texel (at or before the point in x and y, in texel units from the
// image's corner, texel centres at .5) and the weights of the next ones: the corner of
// TextureImage::sample and EnvMap::lookup.
struct TexelCorner {
    x: i32,
    y: i32,
    fx: f32,
    fy: f32,
}

fn texel_corner(x: f32, y: f32) -> TexelCorner {
    let x0 = floor(x - 0.5);
    let y0 = floor(y - 0.5);
    return TexelCorner(i32(x0), i32(y0), x - 0.5 - x0, y - 0.5 - y0);
}

// Texture::sample: TextureImage::sample (bilinear with wrap-around, v = 1 at the top row) at
// the UV through the texture's scale and offset.
fn sample_texture(index: u32, surface_uv: vec2<f32>) -> vec3<f32> {
    let tex = textures[index];
    if tex.width == 0u || tex.height == 0u {
        return vec3<f32>(1.0);
    }
    let uv = surface_uv * tex.uv_scale + tex.uv_offset;
    let w = i32(tex.width);
    let h = i32(tex.height);
    let c = texel_corner(uv.x * f32(tex.width), (1.0 - uv.y) * f32(tex.height));
    let xa = ((c.x % w) + w) % w;
    let xb = (((c.x + 1) % w) + w) % w;
    let ya = ((c.y % h) + h) % h;
    let yb = (((c.y + 1) % h) + h) % h;
    let at = tex.offset;
    let top = lerp3(texels[at + u32(ya * w + xa)].xyz, texels[at + u32(ya * w + xb)].xyz, c.fx);
    let bottom = lerp3(texels[at + u32(yb * w + xa)].xyz, texels[at + u32(yb * w + xb)].xyz, c.fx);
    return lerp3(top, bottom, c.fy);
}

// Tracer::albedo_of.
// Scene::material_at: a textured conductor's tint times its texture at the hit (the texture
// then used up); every other material as it is.
fn material_at(m: Material, sp: SurfacePoint) -> Material {
    var out = m;
    if m.kind == MATERIAL_CONDUCTOR && m.texture != NONE {
        out.color = vec4<f32>(m.color.xyz * sample_texture(m.texture, sp.uv), m.color.w);
        out.texture = NONE;
    }
    return out;
}

fn albedo_of(m: Material, sp: SurfacePoint) -> vec3<f32> {
    if (m.kind == 0u || m.kind == MATERIAL_PLASTIC) && m.texture != NONE {
        return m.color.xyz * sample_texture(m.texture, sp.uv);
    }
    if m.kind == 3u {
        return min(m.color.xyz, vec3<f32>(1.0));
    }
    if m.kind == MATERIAL_CONDUCTOR {
        // The reflectance at normal incidence.
        return specular_reflectance(m, 1.0);
    }
    return m.color.xyz;
}

fn face_forward(n: vec3<f32>, dir: vec3<f32>) -> vec3<f32> {
    if dot3(n, dir) > 0.0 {
        return -n;
    }
    return n;
}

fn offset_origin(p: vec3<f32>, n: vec3<f32>, epsilon: f32) -> vec3<f32> {
    let a = abs(p);
    return p + n * (epsilon + max(max(a.x, a.y), a.z) * 1e-6);
}

fn reflect_dir(d: vec3<f32>, n: vec3<f32>) -> vec3<f32> {
    return d - 2.0 * dot3(d, n) * n;
}

// optics.rs schlick_fresnel.
fn schlick_fresnel(cos_theta: f32, ior: f32) -> f32 {
    let r = (1.0 - ior) / (1.0 + ior);
    let r0 = r * r;
    let m = 1.0 - clamp(cos_theta, 0.0, 1.0);
    return r0 + (1.0 - r0) * (m * m * m * m * m);
}

// optics.rs exact_fresnel: the average of the s and p reflectances; eta = n_i / n_t.
fn exact_fresnel(cos_i_in: f32, cos_t_in: f32, eta: f32) -> f32 {
    let cos_i = clamp(cos_i_in, 0.0, 1.0);
    let cos_t = clamp(cos_t_in, 0.0, 1.0);
    let s_den = eta * cos_i + cos_t;
    let p_den = cos_i + eta * cos_t;
    if s_den <= 0.0 || p_den <= 0.0 {
        return 1.0;
    }
    let r_s = (eta * cos_i - cos_t) / s_den;
    let r_p = (cos_i - eta * cos_t) / p_den;
    return 0.5 * (r_s * r_s + r_p * r_p);
}

// One channel of optics.rs conductor_fresnel.
fn conductor_channel(t1: f32, t2: f32, t3: f32, t4: f32) -> f32 {
    var r_s = 1.0;
    if t1 + t2 > 0.0 {
        r_s = (t1 - t2) / (t1 + t2);
    }
    var r_p = r_s;
    if t3 + t4 > 0.0 {
        r_p = r_s * (t3 - t4) / (t3 + t4);
    }
    return 0.5 * (r_s + r_p);
}

// optics.rs conductor_fresnel: a conductor of index eta + i k seen from index 1.
fn conductor_fresnel(cos_i_in: f32, eta: vec3<f32>, k: vec3<f32>) -> vec3<f32> {
    let cos_i = clamp(cos_i_in, 0.0, 1.0);
    let cos2 = cos_i * cos_i;
    let sin2 = 1.0 - cos2;
    let eta2 = eta * eta;
    let k2 = k * k;
    let t0 = eta2 - k2 - vec3<f32>(sin2);
    let a2_plus_b2 = sqrt(max(t0 * t0 + 4.0 * eta2 * k2, vec3<f32>(0.0)));
    let t1 = a2_plus_b2 + vec3<f32>(cos2);
    let a = sqrt(max(0.5 * (a2_plus_b2 + t0), vec3<f32>(0.0)));
    let t2 = 2.0 * cos_i * a;
    let t3 = cos2 * a2_plus_b2 + vec3<f32>(sin2 * sin2);
    let t4 = t2 * sin2;
    return vec3<f32>(
        conductor_channel(t1.x, t2.x, t3.x, t4.x),
        conductor_channel(t1.y, t2.y, t3.y, t4.y),
        conductor_channel(t1.z, t2.z, t3.z, t4.z),
    );
}

// optics.rs specular_reflectance: a mirror's reflectance, or a conductor's Fresnel term times its
// tint at incidence cosine cos_i; zero for other kinds.
fn specular_reflectance(m: Material, cos_i: f32) -> vec3<f32> {
    if m.kind == MATERIAL_MIRROR {
        return m.color.xyz;
    }
    if m.kind == MATERIAL_CONDUCTOR {
        return conductor_fresnel(cos_i, m.eta.xyz, m.k.xyz) * m.color.xyz;
    }
    return vec3<f32>(0.0);
}

struct DielectricSplit {
    reflected: vec3<f32>,
    fresnel: f32,
    refracted: vec3<f32>,
    has_refracted: bool,
}

// optics.rs dielectric_split (with refract inlined); `flags` is the material's
// (MATERIAL_FRESNEL_SCHLICK chooses Schlick's approximation over the exact equations).
fn dielectric_split(d: vec3<f32>, shading_normal: vec3<f32>, geometric_normal: vec3<f32>, ior: f32, flags: u32) -> DielectricSplit {
    let entering = dot3(d, geometric_normal) < 0.0;
    var n = -shading_normal;
    var eta = ior;
    if entering {
        n = shading_normal;
        eta = 1.0 / ior;
    }
    let reflected = reflect_dir(d, n);
    let cos_i = -dot3(d, n);
    let sin2_t = eta * eta * max(1.0 - cos_i * cos_i, 0.0);
    if sin2_t > 1.0 {
        return DielectricSplit(reflected, 1.0, vec3<f32>(0.0), false);
    }
    let cos_t = sqrt(1.0 - sin2_t);
    let t = normalize3(eta * d + (eta * cos_i - cos_t) * n);
    let c_i = -dot3(d, n);
    let c_t = -dot3(t, n);
    if (flags & MATERIAL_FRESNEL_SCHLICK) == 0u {
        return DielectricSplit(reflected, exact_fresnel(c_i, c_t, eta), t, true);
    }
    // Schlick uses the cosine on the side of the lower index.
    var cos = c_t;
    if (ior >= 1.0) == entering {
        cos = c_i;
    }
    return DielectricSplit(reflected, schlick_fresnel(cos, max(ior, 1.0 / ior)), t, true);
}
