#!/usr/bin/env bash
# Issue 18's comparison on the lent GPU (docs/performance.md): the accels bench over Sponza,
# the dragon and the teapot in a stadium, then raybench's plain BVH2 baseline and our gpu_rays
# on raybench's own rays, through the wide BVH and the two-level grid.
#
# It expects, in the working tree (ignored by git, carried with the call):
#   .gl/*.deb                          the Vulkan and GL loaders (device README)
#   .dev/bin/{accels,gpu_rays,raybench}   release builds (stripped, xz-compressed is fine)
#   .dev/shared/assets/...             the dragon, Sponza and the bunny, laid out as ../shared/assets
# QUICK=1 runs it small (on lavapipe, say); SCENES, LAYOUTS and VARIANTS pick what is compared.
# KD_BUILDS=1 first times the kd-tree's GPU builds alone: per kernel (CAUSTICA_KERNEL_TIMES=1),
# then the device clock with the default small stage beside --kd-small-logs none
# --kd-subgroups off (the small stage measured twice, workgroup reductions), twice each.
set -uo pipefail
for f in .dev/bin/*.xz; do [ -e "$f" ] && xz -dkf "$f" && chmod +x "${f%.xz}"; done
. "$(dirname "$0")/device_setup.sh"
export CAUSTICA_REQUIRE_ASSETS=1
if [ ! -e "$(dirname "$built")/shared/assets" ]; then
  mkdir -p "$(dirname "$built")/shared" && ln -sfn "$PWD/.dev/shared/assets" "$(dirname "$built")/shared/assets"
fi
A="$(dirname "$built")/shared/assets"
if [ "${QUICK:-0}" = 1 ]; then RB=(--quick); RES=384x216; FRES=64x64; RUNS=2; FRAMES=1
else RB=(); RES=1920x1080; FRES=1024x1024; RUNS=9; FRAMES=5; fi
if [ "${KD_BUILDS:-0}" = 1 ]; then
  K=(--scenes "${SCENES:-sponza,dragon,stadium}" --structures kdtree --rounds 0 --builds 1 --resolution 64x64)
  echo "== kd-tree builds, kernel times"
  CAUSTICA_KERNEL_TIMES=1 .dev/bin/accels "${K[@]}" 2>&1 | tee "$OUT/kd_kernels.log"
  for v in default none default none; do
    echo "== kd-tree builds, small stage $v"
    if [ "$v" = none ]; then X=(--kd-small-logs none --kd-subgroups off); else X=(); fi
    .dev/bin/accels "${K[@]}" "${X[@]}" 2>&1 | grep -v '^device' | tee -a "$OUT/kd_builds.log"
  done
fi
echo "== accels"
.dev/bin/accels --scenes "${SCENES:-sponza,dragon,stadium}" --resolution "$RES" \
  --frame-resolution "$FRES" --runs "$RUNS" --builds 3 --frames "$FRAMES" 2>&1 | tee "$OUT/accels.log"
[ "${SKIP_RAYS:-0}" = 1 ] && exit 0
rays=$(mktemp -d)
echo "== raybench"
.dev/bin/raybench --dragon "$A/meshes/stanford/dragon/dragon_vrip.ply.gz" \
  --sponza "$A/scenes/dabrovic_sponza/sponza.obj" --stack 32 --wg 128 "${RB[@]}" \
  --dump-rays "$rays" > "$OUT/raybench.log" 2>&1
sed -n '/## Results/,$p' "$OUT/raybench.log"
echo "== gpu_rays on raybench's rays"
.dev/bin/gpu_rays --rays "$rays" --resolution "$RES" --runs "$RUNS" \
  --layouts "${LAYOUTS:-wide,wide:grid,qbvh:grid}" --variants "${VARIANTS:-base}" --rounds 2 2>&1 | tee "$OUT/gpu_rays.log"
