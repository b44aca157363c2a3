#!/bin/bash
# Runs cargo-fuzz targets as several libFuzzer processes each, sharing one corpus a target,
# until together they pass RUNS_TOTAL (10.5M) executions or CAP seconds; per-process final stats in
# $OUT/logs, crashes in $OUT/artifacts, a summary in $OUT/summary.txt. From the repository root:
#   TARGETS="scene=6 obj=2 gltf=2 exr=6" CAP=500 OUT=out/fuzz fuzz/run_parallel.sh
# BIN is the folder of the built targets (default: cargo fuzz's release folder); the runs in
# docs/reliability.md carried them to the lent machine compressed.
set -u
BIN=${BIN:-fuzz/target/x86_64-unknown-linux-gnu/release}
OUT=${OUT:-out/fuzz}
CAP=${CAP:-480}
# Temporary input files of the mesh and image targets go to memory.
export TMPDIR=${TMPDIR:-/dev/shm}
mkdir -p "$OUT/logs" "$OUT/artifacts"
echo "cores $(nproc)" > "$OUT/summary.txt"
declare -A procs=()
for pair in $TARGETS; do procs[${pair%%=*}]=${pair##*=}; done
for t in "${!procs[@]}"; do
  n=${procs[$t]}
  runs=$(( ${RUNS_TOTAL:-10500000} / n + 1 ))
  max_len=8192
  [ "$t" = exr ] && max_len=2048
  mkdir -p "fuzz/corpus/$t" "$OUT/artifacts/$t"
  echo "$t: $n processes, $runs runs each, cap $CAP s" >> "$OUT/summary.txt"
  for i in $(seq 1 "$n"); do
    "$BIN/$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -runs=$runs -max_total_time=$CAP -timeout=10 \
      -rss_limit_mb=2048 -max_len=$max_len -seed=$((i * 7919)) -print_final_stats=1 \
      -artifact_prefix="$OUT/artifacts/$t/" > "$OUT/logs/$t.$i.log" 2>&1 &
  done
done
wait
for t in "${!procs[@]}"; do
  execs=$(grep -h "stat::number_of_executed_units" "$OUT"/logs/$t.*.log | awk '{s+=$2} END {print s}')
  echo "$t: $execs executions, $(ls "$OUT/artifacts/$t" | wc -l) artifacts" >> "$OUT/summary.txt"
done
cat "$OUT/summary.txt"
