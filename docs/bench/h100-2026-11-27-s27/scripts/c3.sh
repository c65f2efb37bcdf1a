#!/usr/bin/env bash
# Session 12, call 3: rounds 2-3 of the 1B step variants; the graphs suite's range case again (placed, unplaced, inlined).
set -u
o=${OUT:?}
P=$PWD/.gpu/s12
ROUNDS=2 TAG=r VARIANTS="main rng pl plaw rngaw" bash $P/c1.sh
S=/work/main
if [ "$PWD" != "$S" ]; then rm -rf $S; mkdir -p $S && tar xJf $P/src.tar.xz -C $S; fi
mkdir -p $S/build && tar xJf $P/bin.tar.xz -C $S/build
cd $S
timeout 300 build/tests/gpuos_gpu_graphs > "$o/gpu_graphs.log" 2>&1; echo "graphs rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_graphs.log")  ($SECONDS s)"
GPUOS_GRAPH_PLACED=0 timeout 300 build/tests/gpuos_gpu_graphs -tc='*range function*' > "$o/gpu_unplaced_range.log" 2>&1; echo "unplaced range rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_unplaced_range.log")"
GPUOS_INLINE_OPERATORS=1 timeout 300 build/tests/gpuos_gpu_graphs -tc='*range function*' > "$o/gpu_inl_range.log" 2>&1; echo "inline range rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_inl_range.log")"
grep -h "range calls" "$o"/gpu_*.log
echo "end $SECONDS s"
