//! Built-in shapes, generated as meshes: a UV sphere, a subdivided quad and a box.

use glam::{Vec2, Vec3};

use super::MeshData;

/// A sphere of `radius` around the origin made of `segments` × `segments/2` faces (quads, with
/// triangles at the poles), with exact normals and (u, v) = (longitude, latitude) in [0, 1].
pub fn uv_sphere(radius: f32, segments: u32) -> MeshData {
    let seg_u = segments.max(3);
    let seg_v = (segments / 2).max(2);
    let mut m = MeshData::default();
    for j in 0..=seg_v {
        let v = j as f32 / seg_v as f32;
        let theta = v * std::f32::consts::PI; // 0 at the north pole (+Y)
        for i in 0..=seg_u {
            let u = i as f32 / seg_u as f32;
            let phi = u * std::f32::consts::TAU;
            let n = Vec3::new(
                theta.sin() * phi.cos(),
                theta.cos(),
                -theta.sin() * phi.sin(),
            );
            m.positions.push(n * radius);
            m.normals.push(n);
            m.uvs.push(Vec2::new(u, 1.0 - v));
        }
    }
    let row = seg_u + 1;
    for j in 0..seg_v {
        for i in 0..seg_u {
            let a = j * row + i;
            let b = a + 1;
            let c = a + row + 1;
            let d = a + row;
            if j == 0 {
                m.triangles.push([a, d, c]);
            } else if j == seg_v - 1 {
                m.triangles.push([a, d, b]);
            } else {
                m.quads.push([a, d, c, b]);
            }
        }
    }
    m
}

/// A `size.x` × `size.y` rectangle centred at the origin in the XZ plane, facing +Y, split into
/// `divisions.x` × `divisions.y` quads. UVs run from (0,0) at (-x,+z) to (1,1) at (+x,-z), so
/// each quad's patch parameter follows its UVs (useful for displacement).
pub fn grid_quad(size: Vec2, divisions: [u32; 2]) -> MeshData {
    let nx = divisions[0].max(1);
    let nz = divisions[1].max(1);
    let mut m = MeshData::default();
    for j in 0..=nz {
        for i in 0..=nx {
            let u = i as f32 / nx as f32;
            let v = j as f32 / nz as f32;
            m.positions
                .push(Vec3::new((u - 0.5) * size.x, 0.0, (0.5 - v) * size.y));
            m.normals.push(Vec3::Y);
            m.uvs.push(Vec2::new(u, v));
        }
    }
    let row = nx + 1;
    for j in 0..nz {
        for i in 0..nx {
            let a = j * row + i;
            m.quads.push([a, a + 1, a + row + 1, a + row]);
        }
    }
    m
}

/// The six faces of an axis-aligned cube as (outward normal, u axis, v axis), `u × v = n`:
/// a face's corners are `n ± u ± v` (times the half size).
pub const CUBE_FACES: [(Vec3, Vec3, Vec3); 6] = [
    (Vec3::X, Vec3::NEG_Z, Vec3::Y),
    (Vec3::NEG_X, Vec3::Z, Vec3::Y),
    (Vec3::Y, Vec3::X, Vec3::NEG_Z),
    (Vec3::NEG_Y, Vec3::X, Vec3::Z),
    (Vec3::Z, Vec3::X, Vec3::Y),
    (Vec3::NEG_Z, Vec3::NEG_X, Vec3::Y),
];

/// An axis-aligned box centred at the origin with the given full `size`, as six outward-facing
/// quads with flat normals and per-face UVs.
pub fn box_mesh(size: Vec3) -> MeshData {
    let h = size * 0.5;
    let mut m = MeshData::default();
    for (n, u, v) in CUBE_FACES {
        let base = m.positions.len() as u32;
        for (su, sv) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
            m.positions.push((n + u * su + v * sv) * h);
            m.normals.push(n);
            m.uvs.push(Vec2::new((su + 1.0) * 0.5, (sv + 1.0) * 0.5));
        }
        m.quads.push([base, base + 1, base + 2, base + 3]);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quad_normal(m: &MeshData, q: [u32; 4]) -> Vec3 {
        let p = q.map(|i| m.positions[i as usize]);
        (p[1] - p[0]).cross(p[3] - p[0]).normalize()
    }

    #[test]
    fn box_faces_wind_outwards() {
        let m = box_mesh(Vec3::new(2.0, 1.0, 3.0));
        m.validate().unwrap();
        for q in &m.quads {
            let centre = q.iter().map(|&i| m.positions[i as usize]).sum::<Vec3>() / 4.0;
            assert!(quad_normal(&m, *q).dot(centre) > 0.0);
        }
    }

    #[test]
    fn sphere_vertices_lie_on_the_radius_and_faces_wind_outwards() {
        let m = uv_sphere(2.0, 16);
        m.validate().unwrap();
        assert!(m.positions.iter().all(|p| (p.length() - 2.0).abs() < 1e-5));
        for q in &m.quads {
            let centre = q.iter().map(|&i| m.positions[i as usize]).sum::<Vec3>() / 4.0;
            assert!(
                quad_normal(&m, *q).dot(centre) > 0.0,
                "quad {q:?} faces inwards"
            );
        }
        for t in &m.triangles {
            let p = t.map(|i| m.positions[i as usize]);
            let n = (p[1] - p[0]).cross(p[2] - p[0]);
            assert!(
                n.dot(p[0] + p[1] + p[2]) > 0.0,
                "triangle {t:?} faces inwards"
            );
        }
    }

    #[test]
    fn grid_quad_faces_up() {
        let m = grid_quad(Vec2::new(2.0, 2.0), [3, 2]);
        m.validate().unwrap();
        assert_eq!(m.quads.len(), 6);
        assert!(m
            .quads
            .iter()
            .all(|q| quad_normal(&m, *q).dot(Vec3::Y) > 0.99));
    }
}
