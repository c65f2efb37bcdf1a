#!/usr/bin/env bash
# A same-run A/B of two builds on a GPU machine: the benchmarks of build A and build B alternately,
# ROUNDS times, each run's JSON kept, then one table of the headline numbers per build (bench/ab_summary.py).
#
#   bench/ab.sh OUT_DIR BUILD_A BUILD_B [PART...]
#
# BUILD_x: a build folder holding bench/bench_<part> (and host/libgpuos.so where the benchmark links it).
# PART: dispatch, throughput, large, hotpatch (default: all four). Environment: ROUNDS (default 2),
# BENCH_TIMEOUT (seconds per run, default 300), ARGS_<part> (extra arguments of that benchmark; the
# defaults keep a round short: dispatch without its ladder, so its best floor is the naive one, large at
# the 64M target size only).
# Exit status: 0 when every run ran and checked its results (a missed target, exit 4, still counts as a
# run: the table compares the numbers), 1 otherwise.
set -u
out=${1:?usage: bench/ab.sh OUT_DIR BUILD_A BUILD_B [PART...]}
a=${2:?BUILD_A}
b=${3:?BUILD_B}
shift 3
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(dispatch throughput large hotpatch)
rounds=${ROUNDS:-2}
limit=${BENCH_TIMEOUT:-300}
declare -A defaults=([dispatch]="--ladder 0" [throughput]="--threads 4,8" [large]="--sizes 67108864" [hotpatch]="--switches 40 --flips 400 --reps 10")
mkdir -p "$out"
status=0
for ((r = 1; r <= rounds; ++r)); do
  for part in "${parts[@]}"; do
    # Alternate which build goes first, so a drift of the machine does not favour one side.
    order=("A:$a" "B:$b")
    [ $((r % 2)) -eq 0 ] && order=("B:$b" "A:$a")
    for entry in "${order[@]}"; do
      side=${entry%%:*}
      dir=${entry#*:}
      extra_var=ARGS_$part
      # shellcheck disable=SC2086  # word splitting of the extra arguments is intended
      timeout --kill-after=10 "$limit" "$dir/bench/bench_$part" --json "$out/${part}_${side}_$r.json" \
        ${!extra_var:-${defaults[$part]}} >"$out/${part}_${side}_$r.log" 2>&1
      rc=$?
      printf 'round %d %-10s %s exit %d\n' "$r" "$part" "$side" "$rc"
      [ $rc -eq 0 ] || [ $rc -eq 4 ] || status=1
    done
  done
done
python3 "$(dirname "$0")/ab_summary.py" "$out" | tee "$out/summary.txt"
exit $status
