#!/usr/bin/env bash
# The traversal and frame benchmarks of one device call on the lent GPU (docs/performance.md):
# raybench's plain BVH2 baseline dumps its rays, our gpu_rays bench traces the same rays through
# every layout, then the frames bench renders warm frames in the QBVH and the wide layouts.
#
# It expects, in the working tree (ignored by git, carried with the call):
#   .gl/*.deb                 the Vulkan and GL loaders (device README)
#   .dev/bin/{raybench,gpu_rays,frames}   release builds (strip them to fit the carry limit)
#   .dev/shared/assets/...    the dragon and Sponza, laid out as ../shared/assets
# QUICK=1 runs it small (on lavapipe, say); LAYOUTS, VARIANTS and ROUNDS pick what gpu_rays
# compares, and APART=1 adds each layout with its instances kept apart (`gpu_rays --apart`);
# SKIP_RAYS=1 leaves the ray benchmarks out, SKIP_FRAMES=1 the frames, SKIP_CORNELL=1 the
# Cornell box's frames; ANIMATION=1 and CPU=1 add animated.csc and the CPU twin's frame.
set -uo pipefail
. "$(dirname "$0")/device_setup.sh"
export CAUSTICA_REQUIRE_ASSETS=1
# The benches find the assets beside the path they were built in.
if [ ! -e "$(dirname "$built")/shared/assets" ]; then
  mkdir -p "$(dirname "$built")/shared" && ln -sfn "$PWD/.dev/shared/assets" "$(dirname "$built")/shared/assets"
fi
A="$(dirname "$built")/shared/assets"
if [ "${QUICK:-0}" = 1 ]; then RB=(--quick); RES=384x216; RUNS=3; FRAMES=3; SIZES="64x64"
else RB=(); RES=1920x1080; RUNS=15; FRAMES=8; SIZES="1024x1024 256x256"; fi
rays=$(mktemp -d)
if [ "${SKIP_RAYS:-0}" != 1 ]; then
echo "== raybench"
.dev/bin/raybench --dragon "$A/meshes/stanford/dragon/dragon_vrip.ply.gz" \
  --sponza "$A/scenes/dabrovic_sponza/sponza.obj" --stack 32 --wg 128 "${RB[@]}" \
  --dump-rays "$rays" > "$OUT/raybench.log" 2>&1
sed -n '/## Results/,$p' "$OUT/raybench.log"
echo "== gpu_rays on raybench's rays"
.dev/bin/gpu_rays --rays "$rays" --resolution "$RES" --runs "$RUNS" \
  --layouts "${LAYOUTS:-qbvh,wide}" --rounds "${ROUNDS:-2}" --variants "${VARIANTS:-base}" \
  $([ "${APART:-0}" = 1 ] && echo --apart) 2>&1 |
  tee "$OUT/gpu_rays.log"
fi
[ "${SKIP_FRAMES:-0}" = 1 ] && exit 0
echo "== frames"
[ "${SKIP_CORNELL:-0}" = 1 ] && SIZES=""
for res in $SIZES; do
  for accel in qbvh wide qbvh wide; do
    echo "-- $res $accel"
    .dev/bin/frames --scene "$built/scenes/cornell_spheres.csc" --resolution "$res" \
      --frames "$FRAMES" --cpu-frames 0 --accel "$accel" > "$OUT/frames_${res}_$accel.log" 2>&1
    grep -iE "median|warm" "$OUT/frames_${res}_$accel.log" | head -4
  done
done
# ANIMATION=1: scenes/animated.csc, all 24 frames at 1920x1080; CPU=1: the CPU twin's 1024^2 frame.
if [ "${ANIMATION:-0}" = 1 ]; then
  for accel in qbvh wide qbvh wide; do
    echo "-- animated.csc $accel"
    .dev/bin/frames --scene "$built/scenes/animated.csc" --resolution 1920x1080 --animation \
      --accel "$accel" > "$OUT/animated_$accel.log" 2>&1
    grep -iE "in one process|warm med" "$OUT/animated_$accel.log"
  done
fi
if [ "${CPU:-0}" = 1 ]; then
  echo "-- CPU twin, 1024x1024"
  .dev/bin/frames --scene "$built/scenes/cornell_spheres.csc" --resolution 1024x1024 --frames 4 \
    --cpu-frames 1 2>&1 | grep -iE "CPU twin|warm med"
fi
