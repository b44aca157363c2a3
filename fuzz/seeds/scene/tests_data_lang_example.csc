# The example scene of docs/language.md: a Cornell-like box with a glass bunny.
let t = time
let spin = 30 * t

camera { position 0 1 3.5  look_at 0 1 0  fov 40 }
film { resolution 320 240 spp 4 max_depth 6 }

material white { diffuse 0.73 0.73 0.73 }
material glass { dielectric ior 1.5 }
material lamp  { emissive 17 12 4 }

mesh bunny { file "bunny.ply" }
vdmap bark { file "bark_vd.exr" space tangent scale 0.05 }
mesh trunk { file "trunk_quads.obj" displacement bark }
mesh floor { quad size 2 2 }

instance { mesh bunny material glass translate 0.3 0 0 rotate 0 (spin) 0 }
instance { mesh trunk material white scale 0.5 translate -0.4 0 -0.3 }
instance { mesh floor material white }

light point { position 0 1.9 0 power 40 40 40 }
light quad { corner -0.25 1.98 -0.25 edge_u 0.5 0 0 edge_v 0 0 0.5 radiance 17 12 4 }
light environment { file "sky.hdr" scale 0.5 rotate 0 90 0 samples 4 }
mesh orb { sphere radius 0.2 analytic }
instance { mesh orb material glass translate -0.5 0.2 0.3 }

photons { global 500000 caustic 200000 max_bounces 5 knn 64 }
gather { seeds 4096 rays 256 quadtree_levels 7 }
output { path "out/cornell_####.exr" layers color albedo normal depth }
frames 1..48 fps 24
