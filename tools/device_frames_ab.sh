#!/usr/bin/env bash
# Whole frames of two builds side by side on the lent GPU (docs/performance.md): the frames
# bench of a base commit and of the change, alternating, twice, on the textured Sponza at
# 1080p and the OBJ Cornell box at 1024² (photon_map, 1 spp, warm medians of 6 frames).
# It expects, in the working tree (ignored by git, carried with the call):
#   .gl/*.deb                          the Vulkan and GL loaders (device README)
#   .dev/bin/frames_{base,new}[.xz]    the two builds' `frames` benches, stripped (xz optional)
set -uo pipefail
for f in .dev/bin/*.xz; do [ -e "$f" ] && xz -d -f "$f"; done; chmod +x .dev/bin/*
. tools/device_setup.sh
for round in 1 2; do
  for v in base new; do
    for s in "sponza.csc 1920x1080" "cornell_mcguire.csc 1024x1024"; do
      set -- $s
      .dev/bin/frames_$v --scene "$PWD/scenes/$1" --resolution $2 --frames 6 --cpu-frames 0 > "$OUT/${1%.csc}_${v}_$round.log" 2>&1
      echo "== $1 $2 $v round $round"; grep -iE "median|warm" "$OUT/${1%.csc}_${v}_$round.log" | head -6
    done
  done
done
