#!/usr/bin/env bash
# Session 11, call 4: GPU suites of the opt-in build (default: dispatch loops as SASS; a few with GPUOS_INLINE_OPERATORS=1), Python tests.
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
rm -rf /work/ig; mkdir -p /work/ig && tar xJf $P/ig_src.tar.xz -C /work/ig && mkdir -p /work/ig/build && tar xJf $P/igbin.tar.xz -C /work/ig/build
python3 -m pip install -q --no-deps --target /tmp/site_ig3 $P/ig3/*.whl >> "$o/pip.log" 2>&1
cd /work/ig
for t in runtime ops suspend errors fault graphs graph_fault sharing stream online_switch dual_slot_switch alloc; do
  timeout 300 build/tests/gpuos_gpu_$t > "$o/gpu_$t.log" 2>&1; echo "$t rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_$t.log")  ($SECONDS s)"
done
for c in '*hung tile*' '*deadlines per task*' '*shutdown that cannot drain*' '*graph instance whose launch hangs*' '*hung link*' '*long links*'; do
  timeout 300 build/tests/gpuos_gpu_watchdog "-tc=$c" >> "$o/gpu_watchdog.log" 2>&1; echo "watchdog $c rc=$?"; done
for c in '*a trap in a loaded operator*' '*an illegal address in a loaded operator*' '*during a generation switch*' '*during alias flips*' '*during heap requests*' '*in a graph node*' '*blocked on a full queue*'; do
  timeout 300 build/tests/gpuos_gpu_faults "-tc=$c" >> "$o/gpu_faults.log" 2>&1; echo "faults $c rc=$?"; done
for t in ops graphs runtime; do
  GPUOS_INLINE_OPERATORS=1 timeout 300 build/tests/gpuos_gpu_$t > "$o/gpu_inl_$t.log" 2>&1; echo "inline $t rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_inl_$t.log")  ($SECONDS s)"
done
PYTHONPATH=/tmp/site_ig3 timeout 200 python3 -m pytest -q python/tests > "$o/pytest_py.log" 2>&1; echo "python rc $? $(tail -1 "$o/pytest_py.log")"
(cd examples/llama && PYTHONPATH=/tmp/site_ig3 timeout 200 python3 -m pytest -q tests/test_llama_gpu.py > "$o/pytest_llama.log" 2>&1; echo "llama rc $? $(tail -1 "$o/pytest_llama.log")")
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
