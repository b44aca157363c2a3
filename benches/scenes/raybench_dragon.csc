# The Stanford dragon as ../shared/tools/raybench traces it: the mesh alone, in its file's
# coordinates (871,414 triangles), for `cargo bench --bench gpu_rays -- --rays DIR`. Not an
# example scene: it needs the shared assets beside the repository.

camera { position 0 0.12 0.6  look_at 0 0.12 0  fov 30 }
film   { resolution 1920 1080 spp 1 max_depth 1 }

material jade { diffuse 0.35 0.6 0.4 }
mesh dragon { file "../../../shared/assets/meshes/stanford/dragon/dragon_vrip.ply.gz" }
instance { mesh dragon material jade }

light directional { direction -0.5 -1 -0.3 irradiance 1 }
