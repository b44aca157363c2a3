#!/usr/bin/env bash
# Issue 17's builders in one device call on the lent GPU (docs/performance.md): the GPU build
# tests, the builders' times and SAH costs (benches/bvh_builders.rs), raybench's rays traced
# through the wide layout as each builder makes it (gpu_rays), and scenes/deforming.csc at
# 1920x1080, all 24 frames in one process, with its ball rebuilt by each builder.
#
# It expects, in the working tree (ignored by git, carried with the call):
#   .gl/*.deb               the Vulkan and GL loaders (device README)
#   .dev/bin/*.xz           stripped, xz-compressed release builds: bvh_builders, gpu_rays,
#                           frames, caustica, raybench, and the test binaries gpu_lbvh,
#                           gpu_ploc, gpu_sah, gpu_wide_collapse, gpu_middle_build
#   .dev/shared/assets/...  the dragon and Sponza's OBJ, laid out as ../shared/assets
# SKIP_TESTS=1, SKIP_RAYS=1, SKIP_FRAMES=1 leave parts out; RUNS sets the builders' runs,
# LAYOUTS gpu_rays' layouts, ACCELS the frames' builders, TESTS the test binaries run.
set -uo pipefail
for f in .dev/bin/*.xz; do xz -d -f "$f"; done
. "$(dirname "$0")/device_setup.sh"
export CAUSTICA_REQUIRE_ASSETS=1
if [ ! -e "$(dirname "$built")/shared/assets" ]; then
  mkdir -p "$(dirname "$built")/shared" && ln -sfn "$PWD/.dev/shared/assets" "$(dirname "$built")/shared/assets"
fi
A="$(dirname "$built")/shared/assets"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  echo "== GPU build tests"
  for t in ${TESTS:-gpu_lbvh gpu_ploc gpu_sah gpu_wide_collapse gpu_middle_build}; do
    (cd "$built" && "$OLDPWD/.dev/bin/$t" --include-ignored 2>&1 | grep -E "^test result|FAILED|panicked")
  done
fi
echo "== bvh_builders"
.dev/bin/bvh_builders --runs "${RUNS:-9}" 2>&1 | tee "$OUT/bvh_builders.log"
if [ "${SKIP_RAYS:-0}" != 1 ]; then
  rays=$(mktemp -d)
  echo "== raybench"
  .dev/bin/raybench --dragon "$A/meshes/stanford/dragon/dragon_vrip.ply.gz" \
    --sponza "$A/scenes/dabrovic_sponza/sponza.obj" --stack 32 --wg 128 \
    --dump-rays "$rays" > "$OUT/raybench.log" 2>&1
  sed -n '/## Results/,$p' "$OUT/raybench.log"
  echo "== gpu_rays on raybench's rays"
  .dev/bin/gpu_rays --rays "$rays" --runs 15 --layouts "${LAYOUTS:-wide,wide:gpu_lbvh,wide:gpu_sah,wide:gpu_hybrid,wide:gpu_ploc}" \
    --rounds 2 2>&1 | tee "$OUT/gpu_rays.log"
fi
[ "${SKIP_FRAMES:-0}" = 1 ] && exit 0
echo "== deforming.csc, 24 frames at 1920x1080"
for accel in ${ACCELS:-wide:cpu_sah wide:gpu_lbvh wide:gpu_sah wide:gpu_hybrid wide:gpu_ploc}; do
  echo "-- $accel"
  .dev/bin/frames --scene "$built/scenes/deforming.csc" --resolution 1920x1080 --animation \
    --accel "$accel" > "$OUT/deforming_${accel/:/_}.log" 2>&1
  grep -iE "in one process|warm med|middle_build" "$OUT/deforming_${accel/:/_}.log" | head -6
done
echo "-- caustica render --stats, frames 1..3"
.dev/bin/caustica render "$built/scenes/deforming.csc" --frames 1..3 --resolution 1920x1080 \
  --stats -q -o "$OUT/deforming_####.exr" 2>&1 | grep -E "bvh/(device|middle_build|top_build)|device/middle_build|render_ms|^frame"
