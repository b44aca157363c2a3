//! WGSL sources: the embedded `shaders/` tree, the include step that joins shared files into a
//! kernel, naga validation, and shader-module creation.
//!
//! A kernel pulls in shared code with a line of its own: `//!include "shared/rng.wgsl"`. Paths are
//! relative to `shaders/`; each file is included once per kernel, in first-use order, and
//! includes nest. Kernels may also be specialised with `//!define NAME` lines passed by the host
//! and `//!if NAME` … `//!else` … `//!endif` blocks (no nesting), for the feature fallbacks
//! (`SUBGROUPS`, `INT64_ATOMICS`) and for what a scene holds (`VD_PATCHES`: traversal code for
//! displaced patches, left out of kernels for scenes without them; `GLOSSY_MATERIALS`: the shade
//! kernel's rough and plastic materials' code, likewise; `WIDE_BVH`: the scene's nodes are the
//! wide layout's, traversed by `shared/traverse_wide.wgsl`; `ONE_INSTANCE`: its top level holds
//! one instance, entered at once; `GRID`: some mesh's middle level is a two-level grid, walked by
//! `shared/traverse_grid.wgsl`).

use std::collections::HashSet;

include!(concat!(env!("OUT_DIR"), "/shader_files.rs"));

/// Why a kernel could not be assembled or validated.
#[derive(Debug, thiserror::Error)]
pub enum ShaderError {
    #[error("no shader file \"{0}\" under shaders/")]
    Missing(String),
    #[error("{file}: {message}")]
    Directive { file: String, message: String },
    #[error("{file}: WGSL does not parse:\n{message}")]
    Parse { file: String, message: String },
    #[error("{file}: WGSL does not validate:\n{message}")]
    Validate { file: String, message: String },
}

/// The source of `path` (relative to `shaders/`) as embedded at build time.
pub fn shader_file(path: &str) -> Option<&'static str> {
    SHADER_FILES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, s)| *s)
}

/// Every embedded file that declares a compute entry point.
pub fn kernel_files() -> impl Iterator<Item = &'static str> {
    SHADER_FILES
        .iter()
        .filter(|(_, src)| src.contains("@compute"))
        .map(|(p, _)| *p)
}

/// Joins the includes of `path` and applies `defines`, giving one self-contained WGSL source.
pub fn assemble(path: &str, defines: &[&str]) -> Result<String, ShaderError> {
    let mut out = String::new();
    let mut seen = HashSet::new();
    append(path, defines, &mut seen, &mut out, 0)?;
    Ok(out)
}

fn append(
    path: &str,
    defines: &[&str],
    seen: &mut HashSet<String>,
    out: &mut String,
    depth: u32,
) -> Result<(), ShaderError> {
    if !seen.insert(path.to_string()) {
        return Ok(());
    }
    if depth > 16 {
        return Err(ShaderError::Directive {
            file: path.into(),
            message: "includes nest more than 16 deep".into(),
        });
    }
    let source = shader_file(path).ok_or_else(|| ShaderError::Missing(path.to_string()))?;
    // None: outside any //!if; Some(active): inside one, with whether its lines are kept.
    let mut branch: Option<bool> = None;
    for (n, line) in source.lines().enumerate() {
        let trimmed = line.trim_start();
        let err = |message: String| ShaderError::Directive {
            file: format!("{path}:{}", n + 1),
            message,
        };
        if let Some(rest) = trimmed.strip_prefix("//!") {
            let (word, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let arg = arg.trim();
            match word {
                "include" => {
                    if branch != Some(false) {
                        let target = arg.trim_matches('"');
                        append(target, defines, seen, out, depth + 1)?;
                    }
                }
                "if" => {
                    if branch.is_some() {
                        return Err(err("//!if blocks do not nest".into()));
                    }
                    branch = Some(defines.contains(&arg));
                }
                "else" => match branch {
                    Some(active) => branch = Some(!active),
                    None => return Err(err("//!else without //!if".into())),
                },
                "endif" => {
                    if branch.take().is_none() {
                        return Err(err("//!endif without //!if".into()));
                    }
                }
                _ => return Err(err(format!("unknown directive //!{word}"))),
            }
            out.push('\n');
            continue;
        }
        if branch != Some(false) {
            out.push_str(line);
        }
        out.push('\n');
    }
    if branch.is_some() {
        return Err(ShaderError::Directive {
            file: path.into(),
            message: "//!if without //!endif".into(),
        });
    }
    Ok(())
}

/// Parses and validates assembled WGSL with naga, allowing the optional capabilities we use.
pub fn validate(file: &str, source: &str) -> Result<naga::Module, ShaderError> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| ShaderError::Parse {
        file: file.to_string(),
        message: e.emit_to_string(source),
    })?;
    let caps = naga::valid::Capabilities::SUBGROUP
        | naga::valid::Capabilities::SHADER_INT64
        | naga::valid::Capabilities::SHADER_INT64_ATOMIC_MIN_MAX;
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .subgroup_stages(naga::valid::ShaderStages::COMPUTE)
        .subgroup_operations(naga::valid::SubgroupOperationSet::all())
        .validate(&module)
        .map_err(|e| ShaderError::Validate {
            file: file.to_string(),
            message: e.emit_to_string(source),
        })?;
    Ok(module)
}

/// The size and the (member, offset) list naga reflects for the WGSL struct `name` of the
/// shader file `path`, for the tests that hold a Rust twin to it.
#[cfg(test)]
pub(crate) fn struct_layout(path: &str, name: &str) -> (u32, Vec<(String, u32)>) {
    let source = assemble(path, &[]).unwrap_or_else(|e| panic!("{e}"));
    let module = validate(path, &source).unwrap_or_else(|e| panic!("{e}"));
    let (_, ty) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("{path} declares no struct {name}"));
    let naga::TypeInner::Struct { members, span } = &ty.inner else {
        panic!("{name} is not a struct");
    };
    let offsets = members
        .iter()
        .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
        .collect();
    (*span, offsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shader file, assembled with and without the optional features, parses and validates:
    /// a WGSL mistake fails `cargo test`, not a render.
    #[test]
    fn every_shader_file_assembles_and_validates_with_naga() {
        assert!(!SHADER_FILES.is_empty());
        // shared/knn.wgsl takes its heap size from the file that includes it, and
        // kdtree/build_split_node.wgsl its bindings and list accessor: they are validated
        // through their includers (shared/irradiance.wgsl, shared/photon_estimate.wgsl and the
        // kernels; build_split and build_medium), not on their own; so are the two layouts'
        // trace loops and the grid's and kd-tree's walks, joined by shared/traverse.wgsl (with and
        // without WIDE_BVH and GRID below).
        let needs_includer = [
            ("shared/knn.wgsl", "KNN_HEAP_SIZE"),
            ("kdtree/build_split_node.wgsl", "split_list("),
            ("shared/traverse_qbvh.wgsl", "test_reference("),
            ("shared/traverse_wide.wgsl", "test_reference("),
            ("shared/traverse_grid.wgsl", "test_reference("),
            ("shared/traverse_kdtree.wgsl", "test_reference("),
            // The SAH's accumulators take their span from bvh/sah_bounds.wgsl and
            // bvh/sah_bins.wgsl, and its Morton split the code accessor of bvh/sah_split.wgsl
            // and bvh/sah_small.wgsl.
            ("bvh/sah_accumulate.wgsl", "ACC_SPAN"),
            ("bvh/sah_morton.wgsl", "sah_code("),
        ];
        for (path, _) in SHADER_FILES {
            if let Some((_, from_includer)) = needs_includer.iter().find(|(p, _)| p == path) {
                assert!(shader_file(path).unwrap().contains(from_includer));
                continue;
            }
            for defines in [
                &[][..],
                &[
                    "SUBGROUPS",
                    "INT64_ATOMICS",
                    "VD_PATCHES",
                    "GLOSSY_MATERIALS",
                ][..],
                &["WIDE_BVH"][..],
                &["WIDE_BVH", "VD_PATCHES", "GLOSSY_MATERIALS"][..],
                &["GRID", "VD_PATCHES"][..],
                &["WIDE_BVH", "GRID", "VD_PATCHES", "GLOSSY_MATERIALS"][..],
            ] {
                let source = assemble(path, defines).unwrap_or_else(|e| panic!("{e}"));
                if let Err(e) = validate(path, &source) {
                    panic!("{e}");
                }
            }
        }
        // The kernels compiled with KNN_FILTER define the knn_accept it calls; those with a
        // run-time k are also compiled with the larger heap.
        for (path, defines) in [
            ("gather/photon_lookup.wgsl", &["KNN_FILTER"][..]),
            ("gather/irradiance_photons.wgsl", &["KNN_FILTER"][..]),
            (
                "gather/irradiance_photons.wgsl",
                &["KNN_FILTER", "KNN_HEAP_128"][..],
            ),
            ("kdtree/knn_query.wgsl", &["KNN_HEAP_128"][..]),
            (
                "kdtree/build_scatter.wgsl",
                &["SUBGROUPS", "REVERSED_BLOCKS"][..],
            ),
            ("prims/scan_chained.wgsl", &["COMPACT"][..]),
            (
                "prims/scan_chained.wgsl",
                &["SUBGROUPS", "COMPACT", "REVERSED_BLOCKS"][..],
            ),
            ("prims/scan_chained.wgsl", &["REVERSED_BLOCKS"][..]),
            ("kdtree_tri/small.wgsl", &["COUNT"][..]),
            ("kdtree_tri/small.wgsl", &["COUNT", "SUBGROUPS"][..]),
            ("kdtree_tri/small.wgsl", &["WRITE"][..]),
            ("kdtree_tri/small.wgsl", &["WRITE", "SUBGROUPS"][..]),
            ("kdtree/knn_density.wgsl", &["KNN_HEAP_128"][..]),
            ("bench/trace_rays.wgsl", &["WIDE_BVH", "WG128"][..]),
            ("bench/trace_rays.wgsl", &["WIDE_BVH", "ONE_INSTANCE"][..]),
            ("whitted/trace.wgsl", &["WIDE_BVH", "ONE_INSTANCE"][..]),
            (
                "whitted/trace.wgsl",
                &["WIDE_BVH", "ONE_INSTANCE", "VD_PATCHES", "GLOSSY_MATERIALS"][..],
            ),
            ("whitted/shadow.wgsl", &["WIDE_BVH", "ONE_INSTANCE"][..]),
            (
                "whitted/trace.wgsl",
                &["WIDE_BVH", "ONE_INSTANCE", "GRID"][..],
            ),
            (
                "whitted/shadow.wgsl",
                &["WIDE_BVH", "ONE_INSTANCE", "GRID"][..],
            ),
            (
                "bench/trace_rays.wgsl",
                &["WIDE_BVH", "ONE_INSTANCE", "GRID"][..],
            ),
            (
                "whitted/shadow.wgsl",
                &["WIDE_BVH", "ONE_INSTANCE", "VD_PATCHES"][..],
            ),
        ] {
            let source = assemble(path, defines).unwrap_or_else(|e| panic!("{e}"));
            if let Err(e) = validate(path, &source) {
                panic!("{e}");
            }
        }
    }

    #[test]
    fn includes_are_joined_once_and_defines_pick_branches() {
        let source = assemble("shared/rng.wgsl", &[]).unwrap();
        assert_eq!(source.matches("fn pcg_hash").count(), 1);
        assert!(matches!(
            assemble("nope.wgsl", &[]),
            Err(ShaderError::Missing(_))
        ));
    }
}
