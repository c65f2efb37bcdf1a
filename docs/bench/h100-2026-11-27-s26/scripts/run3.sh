#!/usr/bin/env bash
# Session 11, call 3: the GPU suites of the inline-dispatch build (ig), its Python GPU tests, cold loads.
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
mkdir -p /work/ig && tar xJf $P/ig_src.tar.xz -C /work/ig && mkdir -p /work/ig/build && tar xJf $P/igbin.tar.xz -C /work/ig/build
python3 -m pip install -q --no-deps --target /tmp/site_ig2 $P/ig2/*.whl >> "$o/pip.log" 2>&1
PYTHONPATH=/tmp/site_ig2 timeout 200 python3 $P/genload.py /work/ig/examples/llama/ops 2>&1 | grep -v Warn | sed "s/^/ig2: /" | tee -a "$o/genload.txt"
cd /work/ig
for t in runtime ops suspend errors fault graphs graph_fault sharing stream watchdog faults online_switch dual_slot_switch alloc; do
  timeout 300 build/tests/gpuos_gpu_$t > "$o/gpu_$t.log" 2>&1; echo "$t rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_$t.log")  ($SECONDS s)"
done
PYTHONPATH=/tmp/site_ig2 timeout 240 python3 -m pytest -q python/tests > "$o/pytest_py.log" 2>&1; echo "python rc $? $(tail -1 "$o/pytest_py.log")"
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
