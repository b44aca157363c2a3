# A small animation: a glass ball and a mirror box turn on a floor while the light circles
# around them. 24 frames at 24 fps; `time` runs from 0 to 23/24 seconds.
#   cargo run --release -- render scenes/animated.csc --frames 1..3 --preview out/animated_####.png

let t = time
let angle = 2 * pi * t          # one turn of the light per second

camera { position 0 1.6 4  look_at 0 0.4 0  fov 40 }
film   { resolution 320 240 spp 2 max_depth 6 }

material floor  { diffuse 0.7 0.7 0.7 }
material red    { diffuse 0.7 0.15 0.1 }
material glass  { dielectric ior 1.5 }
material chrome { mirror 0.9 0.9 0.95 }

mesh ground { quad size 10 10 }
mesh ball   { sphere radius 0.45 segments 64 }
mesh block  { box size 0.7 0.7 0.7 }

instance { mesh ground material floor }
instance { mesh ball   material glass  translate -0.7 0.45 0 }
instance { mesh block  material chrome rotate 0 (360 * t) 0 translate 0.7 0.35 -0.2 }
instance { mesh ball   material red    scale 0.4 translate (0.6 * sin(angle)) 0.18 1.0 }

light point { position (2 * cos(angle)) 2.5 (2 * sin(angle)) power 120 110 100 }

frames 1..24 fps 24
output { path "out/animated_####.exr" layers albedo depth }
