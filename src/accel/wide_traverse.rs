//! The fused top + middle level traversal of the wide layout (Ylitie et al. 2017, Algorithm 1),
//! the CPU twin of `shaders/shared/traverse_wide.wgsl`, step for step.
//!
//! The state is a node group and a primitive group ([`super::wide`]). Each step takes the node
//! group's nearest child (by octant), pushes the group's rest, and tests that child's children,
//! which gives the next node group and a primitive group; the primitives are tested at once.
//! In the top level a primitive is an instance: entering it pushes the top level's node group,
//! the rest of its primitive group and [`WIDE_RETURN_TO_WORLD`], and starts at the mesh's root
//! with the object-space ray. Popped groups are not culled again against the closest hit so
//! far (the boxes are not kept). Ties in `t` go to the lower (instance, prim), as in every layout.

use glam::Vec3;

use super::prepared::{ObjectRay, Prepared, MESH_WALKED};
use super::vd_frame::VdFrame;
use super::wide::{
    has_children, octant_inv, root_group, take_child, take_prim, WideNode, WideRay, WideStack,
    WIDE_RETURN_TO_WORLD,
};
use super::{Hit, Ray};

/// The instance being traversed: its object-space ray, its mesh's nodes, the ray's node-test
/// form and octant.
struct ObjectLevel<'a> {
    ray: ObjectRay<'a>,
    nodes: &'a [WideNode],
    wide: WideRay,
    oct_inv: u32,
}

impl Prepared {
    /// The fused traversal of the wide layout; `MODE` as in `Prepared::traverse`.
    pub(super) fn traverse_wide<const MODE: u8>(
        &self,
        vd: &VdFrame,
        ray: &Ray,
        record: &mut dyn FnMut(u32, f32, Vec3),
    ) -> Option<Hit> {
        let t_min = ray.t_min;
        let world = WideRay::new(ray.origin, ray.dir);
        let world_oct_inv = octant_inv(ray.dir);
        let mut best: Option<Hit> = None;
        let mut limit = ray.t_max;
        let mut stack = WideStack::default();
        let mut object: Option<ObjectLevel> = None;
        if self.top_wide.is_empty() {
            return None;
        }
        let mut group = root_group(world_oct_inv);
        loop {
            let mut prims = [0u32; 2];
            if has_children(&group) {
                let (nodes, wide_ray, oct_inv) = match &object {
                    Some(o) => (o.nodes, &o.wide, o.oct_inv),
                    None => (self.top_wide.as_slice(), &world, world_oct_inv),
                };
                let child = take_child(&mut group, oct_inv);
                if has_children(&group) {
                    stack.push(group);
                }
                (group, prims) =
                    nodes[child as usize].intersect_children(wide_ray, oct_inv, t_min, limit);
            } else {
                // A popped primitive group (the top level's instances still to enter).
                std::mem::swap(&mut prims, &mut group);
            }
            while prims[1] != 0 {
                let index = take_prim(&mut prims);
                let Some(o) = &object else {
                    let instance = self.top_instance_refs[index as usize];
                    let o = self.enter_instance(instance, ray);
                    if o.mesh.flags & MESH_WALKED != 0 {
                        // A grid is walked at once; the loop stays in the top level.
                        if let Some(hit) =
                            self.walk_grid::<MODE>(vd, &o, t_min, &mut limit, &mut best, record)
                        {
                            return Some(hit);
                        }
                        continue;
                    }
                    // Enter the instance; come back for the rest of the groups.
                    if has_children(&group) {
                        stack.push(group);
                    }
                    if prims[1] != 0 {
                        stack.push(prims);
                    }
                    stack.push(WIDE_RETURN_TO_WORLD);
                    let start = o.mesh.node_offset as usize;
                    let oct_inv = octant_inv(o.dir);
                    object = Some(ObjectLevel {
                        nodes: &self.mesh_wide[start..start + o.mesh.node_count as usize],
                        wide: WideRay::new(o.origin, o.dir),
                        oct_inv,
                        ray: o,
                    });
                    group = root_group(oct_inv);
                    prims = [0, 0];
                    break;
                };
                let prim = o.ray.refs[index as usize];
                if let Some(hit) = self
                    .test_reference::<MODE>(vd, &o.ray, prim, t_min, &mut limit, &mut best, record)
                {
                    return Some(hit);
                }
            }
            if !has_children(&group) && prims[1] == 0 {
                // Nothing left here: the next group from the stack, leaving instances whose
                // entries are done.
                loop {
                    match stack.pop() {
                        None => return best,
                        Some(WIDE_RETURN_TO_WORLD) => object = None,
                        Some(entry) => {
                            group = entry;
                            break;
                        }
                    }
                }
            }
        }
    }
}
