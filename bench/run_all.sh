#!/usr/bin/env bash
# Runs the benchmarks on a GPU machine, writing JSON results and logs into OUT_DIR, and says whether every
# target was met.
#
#   bench/run_all.sh OUT_DIR [BUILD_DIR] [PART...]
#
# BUILD_DIR defaults to ./build. PART: dispatch, throughput, graph, sharing, large, alloc, hotpatch, module (default:
# all eight, in that order; name some to split a long run over several calls).
# Environment: DEVICE (CUDA ordinal, default 0), BENCH_TIMEOUT (seconds per benchmark; default 300, and
# 900 for alloc, whose CUDA malloc baseline runs 1,000,000 threads at every size): a hung run is killed
# and reported instead of blocking the rest.
# Exit status: 0 every benchmark ran, checked its results and met every target; 1 a target was missed or a
# benchmark failed (error, wrong result, timeout, missing program); 3 no CUDA driver or device.
# OUT_DIR/summary.txt holds one line per benchmark and each one's RESULT line. Plot afterwards with
# `python3 bench/plot.py OUT_DIR` (needs matplotlib).
set -u

if [ $# -lt 1 ] || [ "$1" = "--help" ] || [ "$1" = "-h" ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -lt 1 ] && exit 2 || exit 0
fi
out=$1
build=${2:-build}
shift $(( $# >= 2 ? 2 : 1 ))
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(dispatch throughput graph sharing large alloc hotpatch module)
device=${DEVICE:-0}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"

if [ -x "$build/tools/gpuos" ]; then
  "$build/tools/gpuos" info --device "$device" 2>&1 | tee "$out/gpuos_info.txt"
  if [ "${PIPESTATUS[0]}" -eq 3 ]; then
    echo "run_all: no CUDA driver or device; nothing to measure" | tee -a "$summary"
    exit 3
  fi
fi

failed=0
no_device=0
for part in "${parts[@]}"; do
  case $part in
    dispatch|throughput|graph|sharing|large|alloc|hotpatch|module) ;;
    *) echo "run_all: unknown part '$part'" | tee -a "$summary"; failed=1; continue ;;
  esac
  name=bench_$part
  exe=$build/bench/$name
  log=$out/$name.log
  limit=${BENCH_TIMEOUT:-300}
  [ -z "${BENCH_TIMEOUT:-}" ] && [ "$part" = alloc ] && limit=900
  echo "== $name"
  if [ ! -x "$exe" ]; then
    echo "run_all: $exe not found (build with -Dbench=true)" | tee "$log"
    printf '%-18s FAILED (no program)\n' "$name" >>"$summary"
    failed=1
    continue
  fi
  t0=$SECONDS
  timeout --kill-after=10 "$limit" "$exe" --device "$device" --json "$out/$name.json" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  # The benchmarks' exit statuses (bench/README.md): 0 met, 4 a target missed, 3 no device, else failed.
  case $rc in
    0) verdict="every target met"; [ "$part" = module ] && verdict="ran (a diagnostic: no targets)" ;;
    4) verdict="TARGET MISSED (exit 4)"; failed=1 ;;
    3) verdict="NO DEVICE (exit 3)"; no_device=1 ;;
    124|137) verdict="FAILED: timed out after $limit s"; failed=1 ;;
    *) verdict="FAILED (exit $rc)"; failed=1 ;;
  esac
  printf '%-18s %-40s %5ds\n' "$name" "$verdict" $((SECONDS - t0)) | tee -a "$summary"
  grep -E '^(TARGET|RESULT)' "$log" | sed 's/^/    /' >>"$summary"
done
echo "== summary"
cat "$summary"
if [ $failed -ne 0 ]; then
  echo "run_all: a target was missed or a benchmark failed (see above)"
  exit 1
elif [ $no_device -ne 0 ]; then
  echo "run_all: no CUDA device"
  exit 3
fi
echo "run_all: every benchmark ran and met every target"
exit 0
