//! Which instances share a merged tree (`Prepared::merged_prims`): the meshes that the very
//! same transform groups place, each once (a mesh file's material parts, wherever the file is
//! instanced), and the boxes of such a set's primitives. `prepared` builds the trees.

use std::collections::HashMap;

use rayon::prelude::*;

use super::Aabb;
use crate::scene::{Mesh, MeshOrigin, Scene};

/// Which scene instances are traced through merged trees ([`super::Prepared::merged_prims`]),
/// [`merge_plan`].
#[derive(Default)]
pub(super) struct MergePlan {
    /// The mesh sets, each merged into one tree: their meshes, ascending.
    pub sets: Vec<Vec<u32>>,
    /// The groups of instances that place a set (instances of one transform): the set, and
    /// the instances in the order of its meshes.
    pub groups: Vec<(usize, Vec<u32>)>,
}

/// Groups the instances by transform (the very same bits) and merges the meshes that the very
/// same groups place, each once: the parts of a mesh file, wherever it is instanced. Meshes of
/// VD patches, analytic spheres and meshes without faces stay apart, and so does a mesh placed
/// twice by one group or whose groups place no other mesh with it.
pub(super) fn merge_plan(scene: &Scene) -> MergePlan {
    let kind_ok = |mesh: &Mesh| {
        mesh.displacement.is_none()
            && !matches!(mesh.origin, MeshOrigin::AnalyticSphere { .. })
            && mesh.data.face_count() > 0
    };
    let mut by_transform: HashMap<[u32; 12], usize> = HashMap::new();
    // Each mesh's groups, in the order of its instances; None once it cannot merge.
    let mut placed_by: Vec<Option<Vec<usize>>> = scene
        .meshes
        .iter()
        .map(|m| kind_ok(m).then(Vec::new))
        .collect();
    let mut group_of = Vec::with_capacity(scene.instances.len());
    for instance in &scene.instances {
        // The very same bits of the transform's twelve numbers.
        let key: [u32; 12] = instance.transform.to_cols_array().map(f32::to_bits);
        let next = by_transform.len();
        let g = *by_transform.entry(key).or_insert(next);
        group_of.push(g);
        if let Some(slot) = placed_by.get_mut(instance.mesh as usize) {
            if let Some(groups) = slot {
                if groups.contains(&g) {
                    *slot = None;
                } else {
                    groups.push(g);
                }
            }
        }
    }
    // Meshes placed by the same groups form a set (in first-mesh order).
    let mut set_of: HashMap<Vec<usize>, usize> = HashMap::new();
    let mut sets: Vec<(Vec<usize>, Vec<u32>)> = Vec::new();
    for (m, groups) in placed_by.into_iter().enumerate() {
        let Some(mut groups) = groups.filter(|g| !g.is_empty()) else {
            continue;
        };
        groups.sort_unstable();
        let next = sets.len();
        let set = *set_of.entry(groups.clone()).or_insert(next);
        if set == next {
            sets.push((groups, Vec::new()));
        }
        sets[set].1.push(m as u32);
    }
    sets.retain(|(_, meshes)| meshes.len() >= 2);
    let mut set_index = vec![usize::MAX; scene.meshes.len()];
    for (k, (_, meshes)) in sets.iter().enumerate() {
        for &m in meshes {
            set_index[m as usize] = k;
        }
    }
    // A group's members of each set, in the order of the set's meshes.
    let mut members: HashMap<(usize, usize), Vec<u32>> = HashMap::new();
    for (i, instance) in scene.instances.iter().enumerate() {
        if let Some(&set) = set_index.get(instance.mesh as usize) {
            if set != usize::MAX {
                members
                    .entry((set, group_of[i]))
                    .or_default()
                    .push(i as u32);
            }
        }
    }
    let mut groups = Vec::new();
    for (set, (placing, _)) in sets.iter().enumerate() {
        for &g in placing {
            let mut list = members.remove(&(set, g)).unwrap_or_default();
            list.sort_by_key(|&i| scene.instances[i as usize].mesh);
            groups.push((set, list));
        }
    }
    MergePlan {
        sets: sets.into_iter().map(|(_, meshes)| meshes).collect(),
        groups,
    }
}

/// The key of a merged set's build: its meshes' build keys, in order.
pub(super) fn merged_build_key(set: &[u32], keys: &[u128]) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(b"merged");
    for &m in set {
        h.update(&keys[m as usize].to_le_bytes());
    }
    h.digest128()
}

/// One box per primitive of a merged set: every mesh's triangles, then every mesh's quads, in
/// the set's order (the order of `Prepared::merged_prims`).
pub(super) fn merged_boxes(scene: &Scene, set: &[u32]) -> Vec<Aabb> {
    let data = |m: &u32| &scene.meshes[*m as usize].data;
    let mut boxes = Vec::new();
    for d in set.iter().map(data) {
        let p = |v: u32| d.positions[v as usize];
        boxes.par_extend(d.triangles.par_iter().map(|t| Aabb::from_points(t.map(p))));
    }
    for d in set.iter().map(data) {
        let p = |v: u32| d.positions[v as usize];
        boxes.par_extend(d.quads.par_iter().map(|q| Aabb::from_points(q.map(p))));
    }
    boxes
}
