# The Stanford dragon (871,414 triangles) from ../shared/assets, for the CPU benchmark.
# Not an example scene: it needs the shared assets beside the repository.

camera { position 0.4 1.3 4.3  look_at 0 0.6 0  fov 38 }
film   { resolution 1024 1024 spp 1 max_depth 8 }

material jade  { diffuse 0.35 0.6 0.4 }
material floor { diffuse 0.6 0.6 0.6 }

mesh dragon { file "../../../shared/assets/meshes/stanford/dragon/dragon_vrip.ply.gz" }
mesh ground { quad size 10 10 }

# The dragon spans y 0.053..0.2 in its file: scale by 10 and stand it on the floor.
instance { mesh dragon material jade scale 10 translate 0 -0.53 0 }
instance { mesh ground material floor }

light point       { position 1.5 3 2 power 300 290 270 }
light directional { direction -0.5 -1 -0.3 irradiance 0.4 0.45 0.6 }
