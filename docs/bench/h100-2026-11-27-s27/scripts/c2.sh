#!/usr/bin/env bash
# Session 12, call 2: GPU suites of the range build (graphs with the new range case, ops, runtime, online switch), inlining on for graphs/ops; Llama and Python tests with the range operators.
set -u
o=${OUT:?}
P=$PWD/.gpu/s12
S=/work/main
if [ "$PWD" != "$S" ]; then rm -rf $S; mkdir -p $S && tar xJf $P/src.tar.xz -C $S; fi
mkdir -p $S/build && tar xJf $P/bin.tar.xz -C $S/build
[ -d /tmp/site_rng ] || python3 -m pip install -q --no-deps --target /tmp/site_rng $P/whl_rng/*.whl >> "$o/pip.log" 2>&1
cd $S
for t in ${SUITES:-graphs ops runtime online_switch}; do
  timeout 300 build/tests/gpuos_gpu_$t > "$o/gpu_$t.log" 2>&1; echo "$t rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_$t.log")  ($SECONDS s)"
done
grep -h "range calls" "$o/gpu_graphs.log"
for t in ${INL_SUITES:-graphs ops}; do
  GPUOS_INLINE_OPERATORS=1 timeout 300 build/tests/gpuos_gpu_$t > "$o/gpu_inl_$t.log" 2>&1; echo "inline $t rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_inl_$t.log")  ($SECONDS s)"
done
GPUOS_GRAPH_PLACED=0 timeout 300 build/tests/gpuos_gpu_graphs -tc='*range function*' > "$o/gpu_unplaced_range.log" 2>&1; echo "unplaced range rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_unplaced_range.log")"
(cd examples/llama && PYTHONPATH=/tmp/site_rng timeout 250 python3 -m pytest -q tests > "$o/pytest_llama.log" 2>&1; echo "llama rc $? $(tail -1 "$o/pytest_llama.log")  ($SECONDS s)")
PYTHONPATH=/tmp/site_rng timeout 200 python3 -m pytest -q python/tests > "$o/pytest_py.log" 2>&1; echo "python rc $? $(tail -1 "$o/pytest_py.log")  ($SECONDS s)"
echo "end $SECONDS s"
