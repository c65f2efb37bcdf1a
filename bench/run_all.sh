#!/usr/bin/env bash
# Runs the benchmarks on a GPU machine, writing JSON results and logs into OUT_DIR.
#
#   bench/run_all.sh OUT_DIR [BUILD_DIR]        (BUILD_DIR defaults to ./build)
#
# Environment: DEVICE (CUDA ordinal, default 0), BENCH_TIMEOUT (seconds per benchmark, default 300: a
# hung run is killed and reported instead of blocking the rest).
# Exit status: 0 if every benchmark ran and checked its results, 1 otherwise, 3 without a CUDA device
# (gpuos info says so first). Plot afterwards with
# `python3 bench/plot.py OUT_DIR` (needs matplotlib).
set -u

if [ $# -lt 1 ] || [ "$1" = "--help" ] || [ "$1" = "-h" ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -lt 1 ] && exit 2 || exit 0
fi
out=$1
build=${2:-build}
device=${DEVICE:-0}
limit=${BENCH_TIMEOUT:-300}
mkdir -p "$out"

status=0
if [ -x "$build/tools/gpuos" ]; then
  "$build/tools/gpuos" info --device "$device" 2>&1 | tee "$out/gpuos_info.txt"
  if [ "${PIPESTATUS[0]}" -eq 3 ]; then
    echo "run_all: no CUDA driver or device; nothing to measure"
    exit 3
  fi
fi

for name in bench_dispatch bench_throughput bench_large bench_alloc; do
  exe=$build/bench/$name
  echo "== $name"
  if [ ! -x "$exe" ]; then
    echo "run_all: $exe not found (build with -Dbench=true)" | tee "$out/$name.log"
    status=1
    continue
  fi
  timeout --kill-after=10 "$limit" "$exe" --device "$device" --json "$out/$name.json" 2>&1 | tee "$out/$name.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 124 ] && echo "run_all: $name timed out after $limit s" | tee -a "$out/$name.log"
    echo "run_all: $name exited with status $rc" | tee -a "$out/$name.log"
    status=1
  fi
done
exit $status
