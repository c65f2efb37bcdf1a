#!/usr/bin/env bash
# Session 12, call 8: after the review's simplifications: the Llama tests and the graphs suite (placed, inlined).
set -u
o=${OUT:?}
P=$PWD/.gpu/s12
python3 -m pip install -q --no-deps --target /tmp/site_rng $P/whl_rng/*.whl >> "$o/pip.log" 2>&1
(cd examples/llama && PYTHONPATH=/tmp/site_rng timeout 120 python3 -m pytest -q tests > "$o/pytest_llama.log" 2>&1; echo "llama rc $? $(tail -1 "$o/pytest_llama.log")  ($SECONDS s)")
S=/work/main
if [ "$PWD" != "$S" ]; then rm -rf $S; mkdir -p $S && tar xJf $P/src.tar.xz -C $S; fi
mkdir -p $S/build && tar xJf $P/bin.tar.xz -C $S/build
cd $S
timeout 200 build/tests/gpuos_gpu_graphs > "$o/gpu_graphs.log" 2>&1; echo "graphs rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_graphs.log")  ($SECONDS s)"
GPUOS_INLINE_OPERATORS=1 timeout 200 build/tests/gpuos_gpu_graphs -tc='*range function*' > "$o/gpu_inl_range.log" 2>&1; echo "inline range rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_inl_range.log")"
echo "end $SECONDS s"
