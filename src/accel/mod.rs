//! Acceleration structures: binned-SAH BVH, QBVH and wide-BVH collapses, the top level over
//! instances, VD patch bounds.
//!
//! [`Prepared::build`] turns a [`Scene`](crate::scene::Scene) into flat `#[repr(C)]` arrays that
//! both backends use unchanged: a QBVH per mesh (the middle level) over its triangles, quads and
//! VD patches, and a QBVH over the instances (the top level). Rays are traced through both levels
//! in one fused loop with the compact stack of paper 004 (see [`prepared`]).
//!
//! Primitive numbering inside a mesh: triangles first (`0..triangles`), then quads
//! (`triangles..triangles + quads`). In a mesh with a displacement map every quad is a VD patch.

pub mod aabb;
pub mod bvh;
pub mod grid;
pub mod kdtree;
pub mod knn;
pub mod lbvh;
mod merge;
pub mod photon_estimate;
pub mod ploc;
pub mod prepared;
pub mod primitives;
pub mod qbvh;
pub mod sah_build;
pub mod tri_kdtree;
pub mod vd_bottom;
pub mod vd_frame;
pub mod vd_patch;
pub mod vd_seams;
pub mod wide;
pub mod wide_traverse;

use glam::{Vec2, Vec3};

pub use aabb::Aabb;
pub use prepared::{BvhStats, DeviceBuild, InstanceRecord, MeshBuildCache, MeshRecord, Prepared};
pub use qbvh::QbvhNode;
pub use vd_frame::VdFrame;
pub use vd_patch::VdPatchRecord;
pub use wide::WideNode;

/// A ray `origin + t·dir` for `t` in `(t_min, t_max)`; `dir` need not be unit length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ray {
    pub origin: Vec3,
    pub dir: Vec3,
    pub t_min: f32,
    pub t_max: f32,
}

impl Ray {
    /// A ray over `(0, +inf)`.
    pub fn new(origin: Vec3, dir: Vec3) -> Ray {
        Ray {
            origin,
            dir,
            t_min: 0.0,
            t_max: f32::INFINITY,
        }
    }

    pub fn at(&self, t: f32) -> Vec3 {
        self.origin + self.dir * t
    }
}

/// The closest (or any) intersection of a ray.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Ray parameter of the hit (in units of the world ray's `dir`).
    pub t: f32,
    /// Index into `Scene::instances`.
    pub instance: u32,
    /// Index in the mesh's primitive list: triangles first, then quads (and VD patches).
    pub prim: u32,
    /// Barycentrics `(b1, b2)` of vertices 1 and 2 for a triangle; the patch parameter `(s, t)`
    /// for a quad or a VD patch.
    pub st: Vec2,
    /// The unit object-space normal of the triangle of a VD patch's tessellation that was hit
    /// (on the side of `∂P/∂s × ∂P/∂t`); zero for triangles and flat quads.
    pub normal: Vec3,
}

/// Everything shading needs about a hit, in world space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfacePoint {
    pub position: Vec3,
    /// Unit normal from the face winding, not flipped toward the ray.
    pub geometric_normal: Vec3,
    /// Unit interpolated vertex normal when the mesh has normals, else the geometric normal;
    /// always in the geometric normal's hemisphere.
    pub shading_normal: Vec3,
    /// Interpolated vertex UV, or the hit's barycentrics / patch parameter without UVs.
    pub uv: Vec2,
    /// The instance's material (`scene::MaterialId`).
    pub material: u32,
    pub mesh: u32,
}

pub use crate::scene::{BvhBuilder, BvhLayout};

/// Settings of [`Prepared::build`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrepareOptions {
    /// The node layout of both levels.
    pub layout: BvhLayout,
    /// How the middle level's trees are built.
    pub builder: BvhBuilder,
    /// Whether the backend builds the trees of a GPU builder itself: the middle levels of
    /// those meshes are then left to it ([`Prepared::device_builds`]), with room reserved. When
    /// not, the CPU twins of the GPU builder build them here.
    pub device_builds: bool,
    /// Whether instances that share a transform and whose meshes no other instance uses are
    /// traced through one merged tree ([`Prepared::merged_prims`]); the hits are the same.
    pub merge_instances: bool,
}

impl Default for PrepareOptions {
    fn default() -> PrepareOptions {
        PrepareOptions {
            layout: BvhLayout::default(),
            builder: BvhBuilder::default(),
            device_builds: false,
            merge_instances: true,
        }
    }
}

impl PrepareOptions {
    /// The options a scene asks for (`film { accel }`), built here.
    pub fn for_scene(scene: &crate::scene::Scene) -> PrepareOptions {
        PrepareOptions {
            layout: scene.film.accel.unwrap_or_default(),
            builder: scene.film.builder.unwrap_or_default(),
            ..PrepareOptions::default()
        }
    }

    /// The options in `layout` with the binned-SAH builder.
    pub fn layout(layout: BvhLayout) -> PrepareOptions {
        PrepareOptions {
            layout,
            ..PrepareOptions::default()
        }
    }
}

/// Why a scene could not be prepared.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AccelError {
    #[error(
        "{tree} needs {nodes} BVH nodes, but traversal addresses at most {limit} (26-bit indices)"
    )]
    TooManyNodes {
        tree: String,
        nodes: usize,
        limit: usize,
    },
    #[error("{tree} has a BVH {depth} levels deep, more than the traversal stack holds ({limit})")]
    TooDeep {
        tree: String,
        depth: usize,
        limit: usize,
    },
    #[error("mesh \"{mesh}\": {message}")]
    InvalidMesh { mesh: String, message: String },
    #[error("instance {instance} refers to mesh {mesh}, but the scene has {mesh_count} meshes")]
    UnknownMesh {
        instance: usize,
        mesh: u32,
        mesh_count: usize,
    },
    #[error("mesh \"{mesh}\" refers to displacement map {map}, but the scene has {map_count}")]
    UnknownVdMap {
        mesh: String,
        map: u32,
        map_count: usize,
    },
    #[error("instance {instance} has a transform that cannot be inverted")]
    SingularTransform { instance: usize },
    #[error("the scene has {count} {what}, more than 32-bit indices address")]
    TooManyElements { what: &'static str, count: usize },
    #[error(
        "the displaced meshes have {count} patch edges, more than the 2^29 their seams address"
    )]
    TooManyVdEdges { count: usize },
    #[error(
        "{tree}: its two-level grid needs {refs} references, more than the {limit} it may hold \
         (its primitives' boxes overlap too many cells; use a BVH, such as --accel wide)"
    )]
    GridTooLarge { tree: String, refs: u64, limit: u64 },
    #[error(
        "{tree}: its kd-tree needs {words} words, more than the {limit} one tree may hold \
         (use a BVH, such as --accel wide)"
    )]
    KdTreeTooLarge {
        tree: String,
        words: u64,
        limit: u64,
    },
    #[error("the {builder} builder makes the wide layout only, not {layout}")]
    BuilderLayout {
        builder: &'static str,
        layout: &'static str,
    },
}
