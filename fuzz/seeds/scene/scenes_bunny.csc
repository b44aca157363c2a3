# Two Stanford bunnies (3,851 triangles each, shipped in scenes/meshes): one plaster, one glass,
# on a checker-free grey floor under a warm spot light and a cool directional light.
#   cargo run --release -- render scenes/bunny.csc --preview out/bunny.png

camera { position 0 1.2 3.2  look_at 0 0.55 0  fov 35 }
film   { resolution 640 480 spp 4 max_depth 8 }

material plaster { diffuse 0.8 0.78 0.74 }
material glass   { dielectric ior 1.5 tint 0.9 0.97 1 }
material floor   { diffuse 0.45 0.45 0.5 }
material back    { diffuse 0.3 0.32 0.4 }

mesh bunny  { file "meshes/bunny_3851.ply.gz" }
mesh ground { quad size 8 8 }

# The bunny is 0.155 units tall with its feet at y = 0.033: scale by 7 and lift it to the floor.
instance { mesh bunny material plaster scale 7 translate -0.55 -0.231 0 }
instance { mesh bunny material glass   scale 7 rotate 0 -40 0 translate 0.6 -0.231 0.1 }
instance { mesh ground material floor }
instance { mesh ground material back rotate 90 0 0 translate 0 4 -2 }

light spot        { position 1.5 3 2.5 look_at 0 0.4 0 power 400 340 260 cone 25 35 }
light directional { direction -0.4 -1 -0.6 irradiance 0.6 0.7 0.9 }

output { path "out/bunny_####.exr" layers albedo normal depth }
