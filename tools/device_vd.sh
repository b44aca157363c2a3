#!/usr/bin/env bash
# The displaced Party scene's warm GPU frames in one device call on the lent GPU
# (docs/performance.md): `vd_party` (1920×1080, Whitted, 1 spp), alternating with a base build.
#
# It expects, in the working tree (ignored by git, carried with the call):
#   .gl/*.deb                  the Vulkan and GL loaders (device README)
#   .dev/bin/vd_party          a release build of the bench (stripped)
#   .dev/base/bin/vd_party     optionally the same bench of a base build, to alternate with
# Options: ROUNDS (default 2), RUNS (timed frames per run, default 7).
set -uo pipefail
. "$(dirname "$0")/device_setup.sh"
builds=(.dev/bin)
[ -x .dev/base/bin/vd_party ] && builds=(.dev/base/bin .dev/bin)
for round in $(seq "${ROUNDS:-2}"); do
  for b in "${builds[@]}"; do
    echo "== $b vd_party (round $round)"
    (cd "$built" && "$OLDPWD/$b/vd_party" --resolution 1920 1080 --spp 1 --runs "${RUNS:-7}") 2>&1 |
      grep -vE "^\s*$" | tail -32
  done
done
