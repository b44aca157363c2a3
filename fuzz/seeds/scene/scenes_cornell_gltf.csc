# McGuire's Cornell box as Blender writes it in glTF 2.0: scenes/meshes/CornellBox-Original.obj
# imported into Blender and exported as binary glTF, with a camera, by
#   python3 tools/blender_gltf.py scenes/meshes/CornellBox-Original.obj \
#       scenes/meshes/CornellBox-Original.glb --camera 0 1 3.9 0 1 0 39
# `import` brings its mesh (one part per material), its materials (the ceiling light's
# emission is an area light) and its camera. It renders as scenes/cornell_mcguire.csc does.
#   cargo run --release -- render scenes/cornell_gltf.csc --preview out/cornell_gltf.png

import "meshes/CornellBox-Original.glb"

film    { resolution 256 256 spp 4 max_depth 8 }
photons { global 200000 caustic 0 max_bounces 8 knn 64 }
gather  { seeds 4096 rays 256 }
output  { path "out/cornell_gltf_####.exr" }
