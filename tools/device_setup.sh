# Sourced by the device scripts (tools/device_traversal.sh, tools/device_maps.sh) on the lent
# GPU: $OUT made, the Vulkan and GL loaders carried in .gl/ unpacked (device README), the GPU
# variables set, and the checkout linked where the benches were built (/work/main, `built`), so
# that they find their scenes. Prints the GPU and its clocks.
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
if ls .gl/*.deb >/dev/null 2>&1 && ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
export WGPU_BACKEND=vulkan CAUSTICA_REQUIRE_GPU=1
built=/work/main
if [ ! -e "$built/benches" ]; then mkdir -p /work && ln -sfn "$PWD" "$built"; fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>/dev/null
