//! Every struct of shaders/shared/types.wgsl has a `#[repr(C)]` Rust twin with the same size,
//! array stride and member offsets, as naga lays the WGSL out (no GPU needed).

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};

use caustica::accel::bvh::BinaryNodeRecord;
use caustica::accel::photon_estimate::PhotonRecord;
use caustica::accel::vd_seams::VdSeams;
use caustica::accel::{InstanceRecord, MeshRecord, QbvhNode, VdPatchRecord, WideNode};
use caustica::gpu::gather::{GatherParams, GatherPath};
use caustica::gpu::irradiance_photons::PhotonLookupParams;
use caustica::gpu::photons::{GpuPhotonPath, PhotonParams};
use caustica::gpu::upload::{
    FrameParams, GpuBenchRay, GpuFirstHit, GpuHit, GpuLight, GpuMaterial, GpuRay, GpuShadeNode,
    GpuShadowRay, GpuTexture,
};
use caustica::gpu::upload::{GpuIrradianceSample, GpuShadingPoint};
use caustica::gpu::vd_batch::{VdBatchMap, VdBatchParams, VdBatchPatch, VdBatchRay, VdRecordHit};
use caustica::render::photons::PhotonEmitter;

/// (size, [(member, offset)]) of a Rust struct, by listing its fields.
macro_rules! rust_layout {
    ($ty:ty { $($field:ident),* $(,)? }) => {
        (size_of::<$ty>() as u32, vec![$((stringify!($field), offset_of!($ty, $field) as u32)),*])
    };
}

/// A Rust struct's size and its (member, offset) pairs.
type RustLayout = (u32, Vec<(&'static str, u32)>);

/// The Rust twin of each WGSL struct, by WGSL name.
fn rust_twins() -> BTreeMap<&'static str, RustLayout> {
    BTreeMap::from([
        (
            "BenchRay",
            rust_layout!(GpuBenchRay {
                origin,
                t_max,
                dir,
                any_hit
            }),
        ),
        (
            "BinaryNodeRecord",
            rust_layout!(BinaryNodeRecord {
                lo,
                left,
                hi,
                right,
                first,
                count,
                parent,
                _pad
            }),
        ),
        (
            "QbvhNode",
            rust_layout!(QbvhNode {
                bounds_min,
                first,
                bounds_max,
                meta
            }),
        ),
        (
            "WideNode",
            rust_layout!(WideNode {
                origin,
                exps_imask,
                child_base,
                prim_base,
                meta,
                q
            }),
        ),
        (
            "MeshRecord",
            rust_layout!(MeshRecord {
                vertex_offset,
                vertex_count,
                triangle_offset,
                triangle_count,
                quad_offset,
                quad_count,
                node_offset,
                node_count,
                prim_ref_offset,
                vd_patch_offset,
                flags,
                depth
            }),
        ),
        (
            "Instance",
            rust_layout!(InstanceRecord {
                object_to_world,
                world_to_object,
                mesh,
                material,
                light,
                members
            }),
        ),
        (
            "VdPatch",
            rust_layout!(VdPatchRecord {
                bounds_min,
                map,
                bounds_max,
                mesh,
                quad,
                _pad
            }),
        ),
        (
            "Material",
            rust_layout!(GpuMaterial {
                kind,
                texture,
                ior,
                flags,
                color,
                eta,
                k
            }),
        ),
        (
            "Light",
            rust_layout!(GpuLight {
                kind,
                samples,
                cos_outer,
                cos_inner,
                first,
                count,
                _pad,
                position,
                direction,
                edge_v,
                normal,
                color
            }),
        ),
        (
            "Texture",
            rust_layout!(GpuTexture {
                offset,
                width,
                height,
                _pad,
                uv_scale,
                uv_offset
            }),
        ),
        (
            "FrameParams",
            rust_layout!(FrameParams {
                origin,
                right,
                up,
                forward,
                width,
                height,
                spp,
                max_depth,
                seed_lo,
                seed_hi,
                light_count,
                epsilon,
                ray_count,
                bounce,
                centre_rays,
                ray_capacity,
                shadow_capacity,
                top_node_count,
                vd_max_level,
                vd_pixel_spread,
                ray_offset,
                shadows_per_hit,
                vd_record_capacity,
                sampler,
                sample_offset,
                pass_spp,
                tile_offset,
                crop_x0,
                crop_y0,
                crop_x1,
                crop_y1,
                _pad2
            }),
        ),
        (
            "Ray",
            rust_layout!(GpuRay {
                origin,
                pixel,
                dir,
                sample,
                dimension,
                _pad0,
                _pad1,
                _pad2
            }),
        ),
        (
            "Hit",
            rust_layout!(GpuHit {
                t,
                instance,
                prim,
                normal,
                st
            }),
        ),
        (
            "ShadowRay",
            rust_layout!(GpuShadowRay {
                origin,
                node,
                dir,
                t_max,
                contribution,
                _pad
            }),
        ),
        (
            "ShadeNode",
            rust_layout!(GpuShadeNode {
                own,
                link,
                weight,
                fresnel
            }),
        ),
        (
            "FirstHit",
            rust_layout!(GpuFirstHit {
                albedo,
                hit,
                normal,
                _pad0,
                geometric,
                _pad1,
                position,
                _pad2
            }),
        ),
        (
            "VdBatchPatch",
            rust_layout!(VdBatchPatch {
                v0,
                map,
                v1,
                tile_offset,
                v2,
                tile_stride,
                v3,
                tile_width,
                uv0,
                uv1,
                uv2,
                uv3,
                bounds_min,
                tile_height,
                bounds_max,
                _pad0
            }),
        ),
        (
            "VdBatchMap",
            rust_layout!(VdBatchMap {
                space,
                channel_x,
                channel_y,
                channel_z,
                scale,
                midlevel,
                padding,
                _pad0
            }),
        ),
        (
            "VdBatchRay",
            rust_layout!(VdBatchRay {
                origin,
                t_max,
                dir,
                spread,
                hit,
                instance,
                _pad1,
                _pad2
            }),
        ),
        (
            "VdRecordHit",
            rust_layout!(VdRecordHit {
                normal,
                t,
                st,
                cell,
                patch_index
            }),
        ),
        (
            "VdBatchParams",
            rust_layout!(VdBatchParams {
                max_level,
                mode,
                slice_words,
                node_words_offset,
                record_count,
                edge_words_offset,
                patch_count,
                _pad2
            }),
        ),
        (
            "VdSeams",
            rust_layout!(VdSeams {
                edge_owner,
                edge_code,
                corner_owner
            }),
        ),
        (
            "PhotonEmitter",
            rust_layout!(PhotonEmitter {
                kind,
                first,
                count,
                triangles,
                triangle_count,
                _pad0,
                _pad1,
                _pad2,
                position,
                axis,
                edge_u,
                edge_v,
                power
            }),
        ),
        (
            "PhotonParams",
            rust_layout!(PhotonParams {
                ray_count,
                emitter_count,
                stream_tag,
                pass_kind,
                max_hits,
                bounce,
                first_photon,
                target_count
            }),
        ),
        ("PhotonPath", rust_layout!(GpuPhotonPath { power, flags })),
        (
            "ShadingPoint",
            rust_layout!(GpuShadingPoint {
                position,
                pixel,
                normal,
                node
            }),
        ),
        (
            "IrradianceSample",
            rust_layout!(GpuIrradianceSample {
                position,
                radius,
                normal,
                _pad0,
                irradiance,
                _pad1,
                gradient
            }),
        ),
        (
            "GatherParams",
            rust_layout!(GatherParams {
                seed_count,
                rays_per_seed,
                ray_count,
                step,
                radius_min,
                radius_max,
                rows,
                seed_offset
            }),
        ),
        (
            "GatherPath",
            rust_layout!(GatherPath {
                weight,
                radiance,
                first_t
            }),
        ),
        (
            "PhotonLookupParams",
            rust_layout!(PhotonLookupParams {
                count,
                stride,
                photon_count,
                max_dist2,
                k,
                filter_code,
                cone_k,
                _pad0
            }),
        ),
        (
            "PhotonRecord",
            rust_layout!(PhotonRecord {
                position,
                direction,
                power,
                flags
            }),
        ),
    ])
}

/// The Rust name of a WGSL member that had to be renamed (WGSL reserves `meta`).
fn rust_name(wgsl: &str) -> &str {
    match wgsl {
        "meta_bits" => "meta",
        other => other,
    }
}

#[test]
fn every_shared_wgsl_struct_has_the_size_and_offsets_of_its_rust_twin() {
    let twins = rust_twins();
    let mut checked = Vec::new();
    // types.wgsl, and the VD batch stage's and the photon tracer's own files.
    for file in [
        "shared/types.wgsl",
        "shared/vd_types.wgsl",
        "shared/photon_types.wgsl",
        "shared/gather_types.wgsl",
        "shared/bvh_build.wgsl",
    ] {
        let source = caustica::gpu::shader::assemble(file, &[]).unwrap_or_else(|e| panic!("{e}"));
        let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{e}"));
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).expect("layout");
        for (handle, ty) in module.types.iter() {
            let (Some(name), naga::TypeInner::Struct { members, span }) = (&ty.name, &ty.inner)
            else {
                continue;
            };
            let (rust_size, rust_fields) = twins
                .get(name.as_str())
                .unwrap_or_else(|| panic!("WGSL struct {name} has no Rust twin in this test"));
            let layout = layouter[handle];
            assert_eq!(*span, *rust_size, "{name}: WGSL size vs size_of");
            assert_eq!(
                layout.to_stride(),
                *rust_size,
                "{name}: WGSL array stride (size rounded to its alignment) vs size_of"
            );
            let wgsl_fields: Vec<(&str, u32)> = members
                .iter()
                .map(|m| (rust_name(m.name.as_deref().unwrap_or("?")), m.offset))
                .collect();
            assert_eq!(
                &wgsl_fields, rust_fields,
                "{name}: member names and offsets differ"
            );
            checked.push(name.clone());
        }
    }
    let expected: Vec<String> = twins.keys().map(|k| k.to_string()).collect();
    checked.sort();
    assert_eq!(checked, expected, "every Rust twin has a WGSL struct");
}
