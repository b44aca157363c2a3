# The Stanford bunny (69,451 triangles) from ../shared/assets on a floor, for the ray benchmarks.

camera { position 0 1.0 2.4  look_at 0 0.6 0  fov 40 }
film   { resolution 1920 1080 spp 1 max_depth 4 }

material plaster { diffuse 0.8 0.78 0.74 }
material chrome  { mirror 0.9 }
mesh bunny  { file "../../../shared/assets/meshes/stanford/bunny/bun_zipper.ply" }
mesh ground { quad size 10 10 }
instance { mesh bunny material plaster scale 7 translate 0 -0.231 0 }
instance { mesh ground material chrome }

light point { position 1 3 2 power 300 }
