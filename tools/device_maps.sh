#!/usr/bin/env bash
# The photon maps' benchmarks of one device call on the lent GPU (docs/performance.md): the point
# kd-tree build, the k = 64 kNN searches, and warm frames of the Cornell box at 256² (optionally
# with each kernel's time).
#
# It expects, in the working tree (ignored by git, carried with the call):
#   .gl/*.deb                         the Vulkan and GL loaders (device README)
#   .dev/bin/{kdtree_build,knn,frames}   release builds of the benches (stripped)
#   .dev/base/bin/...                 optionally the same benches of a base build, to alternate with
# Options: SKIP_KD=1, SKIP_KNN=1, SKIP_FRAMES=1 leave a part out; KERNEL_TIMES=1 adds a frame
# with CAUSTICA_KERNEL_TIMES=1; SIZES (default "256x256 1024x1024"); KD_POINTS; ROUNDS.
set -uo pipefail
. "$(dirname "$0")/device_setup.sh"
builds=(.dev/bin)
[ -d .dev/base/bin ] && builds=(.dev/base/bin .dev/bin)
for round in $(seq "${ROUNDS:-1}"); do
for b in "${builds[@]}"; do
  tag=$(echo "$b" | tr '/.' '__')
  if [ "${SKIP_KD:-0}" != 1 ]; then
    echo "== $b kdtree_build (round $round)"
    $b/kdtree_build --points ${KD_POINTS:-400000 1000000 10000000} --runs 5 --cpu-runs "${KD_CPU_RUNS:-0}" 2>&1 |
      tee -a "$OUT/kd$tag.log" | grep -E "points|GPU \(sub|timestamps|same words"
  fi
  if [ "${SKIP_KNN:-0}" != 1 ]; then
    for sorted in "" --sorted; do
      echo "== $b knn $sorted (round $round)"
      $b/knn --points 1000000 --queries 1000000 --k 64 --runs 3 --cpu-queries 20000 $sorted 2>&1 |
        tee -a "$OUT/knn$tag.log" | grep -vE "^\s*$" | head -30
    done
  fi
  if [ "${SKIP_FRAMES:-0}" != 1 ]; then
    for res in ${SIZES:-256x256 1024x1024}; do
      echo "== $b frames $res (round $round)"
      $b/frames --scene "$built/scenes/cornell_spheres.csc" --resolution "$res" --frames 8 \
        --cpu-frames 0 > "$OUT/frames_${res}$tag.log" 2>&1
      grep -iE "median|warm" "$OUT/frames_${res}$tag.log" | head -6
    done
    if [ "${KERNEL_TIMES:-0}" = 1 ] && [ "$round" = 1 ]; then
      echo "== $b kernel times 256x256"
      CAUSTICA_KERNEL_TIMES=1 $b/frames --scene "$built/scenes/cornell_spheres.csc" \
        --resolution 256x256 --frames 4 --cpu-frames 0 > "$OUT/kernels$tag.log" 2>&1
      tail -60 "$OUT/kernels$tag.log"
    fi
  fi
done
done
