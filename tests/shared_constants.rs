//! Constants that Rust and WGSL both spell out agree: each WGSL `const` named below, read by
//! naga from its assembled shader, holds the value of its Rust twin. A constant renamed or
//! removed on the WGSL side fails too.

use caustica::accel::photon_estimate::EstimateFilter;
use caustica::gpu::shader::{assemble, validate};
use caustica::gpu::upload;
use caustica::render::{gather, irradiance_photons, photons};

/// The literal a WGSL `const` holds in `file` (assembled without defines).
fn wgsl_const(file: &str, name: &str) -> naga::Literal {
    let source = assemble(file, &[]).unwrap_or_else(|e| panic!("{e}"));
    let module = validate(file, &source).unwrap_or_else(|e| panic!("{e}"));
    let (_, constant) = module
        .constants
        .iter()
        .find(|(_, c)| c.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("{file} has no const {name}"));
    match module.global_expressions[constant.init] {
        naga::Expression::Literal(literal) => literal,
        ref other => panic!("{file}: const {name} is {other:?}, not a literal"),
    }
}

fn assert_u32(file: &str, name: &str, rust: u32) {
    match wgsl_const(file, name) {
        naga::Literal::U32(v) => assert_eq!(v, rust, "{file}: {name}"),
        other => panic!("{file}: const {name} is {other:?}, not a u32"),
    }
}

fn assert_f32(file: &str, name: &str, rust: f32) {
    match wgsl_const(file, name) {
        naga::Literal::F32(v) => assert_eq!(v.to_bits(), rust.to_bits(), "{file}: {name}"),
        other => panic!("{file}: const {name} is {other:?}, not an f32"),
    }
}

#[test]
fn scene_material_and_sampler_codes_match_their_rust_twins() {
    assert_u32("shared/scene.wgsl", "NONE", upload::NONE);
    assert_u32(
        "shared/types.wgsl",
        "MATERIAL_MIRROR",
        upload::MATERIAL_MIRROR,
    );
    assert_u32(
        "shared/types.wgsl",
        "MATERIAL_CONDUCTOR",
        upload::MATERIAL_CONDUCTOR,
    );
    assert_u32(
        "shared/types.wgsl",
        "MATERIAL_FRESNEL_SCHLICK",
        upload::MATERIAL_FRESNEL_SCHLICK,
    );
    assert_u32("shared/types.wgsl", "LIGHT_MESH", upload::LIGHT_MESH);
    assert_u32(
        "shared/types.wgsl",
        "LIGHT_MESH_TRIANGLE",
        upload::LIGHT_MESH_TRIANGLE,
    );
    assert_u32("shared/types.wgsl", "LIGHT_SPHERE", upload::LIGHT_SPHERE);
    assert_u32("shared/rng.wgsl", "SAMPLER_SOBOL", upload::SAMPLER_SOBOL);
    assert_u32(
        "shared/rng.wgsl",
        "SAMPLER_INDEPENDENT",
        upload::SAMPLER_INDEPENDENT,
    );
}

#[test]
fn mesh_flags_and_the_triangle_kdtree_walks_constants_match_their_rust_twins() {
    use caustica::accel::prepared::{MESH_GRID, MESH_KDTREE, MESH_MERGED, MESH_SPHERE};
    use caustica::accel::tri_kdtree::{HEADER_WORDS, INDEX_MASK, SHORT_STACK};
    let file = "shared/scene.wgsl";
    assert_u32(file, "MESH_SPHERE", MESH_SPHERE);
    assert_u32(file, "MESH_MERGED", MESH_MERGED);
    assert_u32(file, "MESH_GRID", MESH_GRID);
    assert_u32(file, "MESH_KDTREE", MESH_KDTREE);
    assert_u32(file, "KD_HEADER_WORDS", HEADER_WORDS as u32);
    assert_u32(file, "KD_SHORT_STACK", SHORT_STACK as u32);
    assert_u32(file, "KD_INDEX_MASK", INDEX_MASK);
}

#[test]
fn photon_codes_flags_and_stream_tags_match_their_rust_twins() {
    let file = "photons/common.wgsl";
    assert_u32(file, "EMITTER_SPOT", photons::EMITTER_SPOT);
    assert_u32(file, "EMITTER_DIRECTIONAL", photons::EMITTER_DIRECTIONAL);
    assert_u32(file, "EMITTER_QUAD", photons::EMITTER_QUAD);
    assert_u32(file, "EMITTER_MESH", photons::EMITTER_MESH);
    assert_u32(file, "EMITTER_TRIANGLE", photons::EMITTER_TRIANGLE);
    assert_u32(file, "EMITTER_SPHERE", photons::EMITTER_SPHERE);
    assert_u32(file, "PHOTON_BOUNCES_MASK", photons::PHOTON_BOUNCES_MASK);
    assert_u32(file, "PHOTON_SPECULAR_PATH", photons::PHOTON_SPECULAR_PATH);
    assert_u32(
        "shared/photon_types.wgsl",
        "PHOTON_NORMAL_SHIFT",
        caustica::accel::photon_estimate::PHOTON_NORMAL_SHIFT,
    );
    assert_u32(
        "seeding/select.wgsl",
        "SEED_STREAM_TAG",
        caustica::cpu::gather::SEED_STREAM_TAG,
    );
    assert_u32(
        "gather/common.wgsl",
        "GATHER_STREAM_TAG",
        caustica::cpu::gather::GATHER_STREAM_TAG,
    );
}

#[test]
fn estimate_search_and_seeding_parameters_match_their_rust_twins() {
    let file = "shared/photon_estimate.wgsl";
    assert_u32(file, "ESTIMATE_FILTER_NONE", EstimateFilter::None.code());
    assert_u32(
        file,
        "ESTIMATE_FILTER_CONE",
        EstimateFilter::Cone { k: 1.1 }.code(),
    );
    assert_u32(
        file,
        "ESTIMATE_FILTER_EPANECHNIKOV",
        EstimateFilter::Epanechnikov.code(),
    );
    assert_u32(file, "ESTIMATE_PI_BITS", std::f32::consts::PI.to_bits());
    assert_u32(
        "kdtree/knn_query.wgsl",
        "KNN_MAX_K",
        caustica::accel::knn::KNN_MAX_K as u32,
    );
    // The heap of a run-time-k kernel compiled without KNN_HEAP_128.
    assert_u32(
        "kdtree/knn_query.wgsl",
        "KNN_HEAP_SIZE",
        caustica::gpu::knn::KNN_SMALL_HEAP,
    );
    assert_u32(
        "shared/irradiance.wgsl",
        "INTERPOLATION_NEIGHBOURS",
        gather::INTERPOLATION_NEIGHBOURS as u32,
    );
    assert_f32(
        "shared/irradiance.wgsl",
        "INTERPOLATION_ACCURACY",
        gather::INTERPOLATION_ACCURACY,
    );
    assert_f32(
        "kdtree/build_common.wgsl",
        "KD_EMPTY_CUT_FRACTION",
        caustica::accel::kdtree::KD_EMPTY_CUT_FRACTION,
    );
    assert_f32(
        "kdtree/build_common.wgsl",
        "KD_VVH_TRAVERSAL_COST",
        caustica::accel::kdtree::KD_VVH_TRAVERSAL_COST,
    );
    assert_f32(
        "gather/photon_lookup.wgsl",
        "LOOKUP_MIN_COS",
        irradiance_photons::LOOKUP_MIN_COS,
    );
    assert_u32(
        "seeding/common.wgsl",
        "POSITION_BITS",
        caustica::cpu::gather::SEED_POSITION_BITS,
    );
    assert_u32(
        "seeding/common.wgsl",
        "NORMAL_BITS",
        caustica::cpu::gather::SEED_NORMAL_BITS,
    );
}
