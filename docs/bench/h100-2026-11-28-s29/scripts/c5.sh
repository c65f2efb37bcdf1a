#!/usr/bin/env bash
# Session 14, call 5: the C++ GPU suites of this build (stage memory in the launch), graphs and ops also
# inlined; the Python suite; the Llama tests with the tile-major operators; bench_decode at batch 1
# against HEAD's operators.
set -u
o=${OUT:?}
R=$PWD
P=$R/.gpu/s14
[ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }
mkdir -p build && tar xJf $P/bin.tar.xz -C build
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
[ -f /tmp/w1b/config.json ] || (python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1; echo "weights done at $SECONDS s") &
cd /work/main
for t in errors runtime ops graphs graph_fault online_switch dual_slot_switch stream suspend alloc sharing; do
  timeout 200 build/tests/gpuos_gpu_$t > "$o/gpu_$t.log" 2>&1; echo "$t rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_$t.log") ($SECONDS s)"
done
for t in graphs ops; do
  GPUOS_INLINE_OPERATORS=1 timeout 200 build/tests/gpuos_gpu_$t > "$o/gpu_inl_$t.log" 2>&1; echo "inline $t rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_inl_$t.log") ($SECONDS s)"
done
timeout 150 python3 -m pytest -q python/tests > "$o/pytest_py.log" 2>&1; echo "python rc $? $(tail -1 "$o/pytest_py.log") ($SECONDS s)"
cd examples/llama
timeout 200 python3 -m pytest -q tests > "$o/pytest_llama.log" 2>&1; echo "llama tests rc $? $(tail -1 "$o/pytest_llama.log") ($SECONDS s)"
wait
cd $o && tar czf all.tgz *.log 2>/dev/null; rm -f *.log
echo "end $SECONDS s"
