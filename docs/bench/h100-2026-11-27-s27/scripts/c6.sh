#!/usr/bin/env bash
# Session 12, call 6: the remaining GPU suites on the range build (the built-ins' adapters changed with gpuos/op.cuh).
set -u
o=${OUT:?}
P=$PWD/.gpu/s12
S=/work/main
if [ "$PWD" != "$S" ]; then rm -rf $S; mkdir -p $S && tar xJf $P/src.tar.xz -C $S; fi
mkdir -p $S/build && tar xJf $P/bin.tar.xz -C $S/build
cd $S
for t in suspend errors fault graph_fault sharing stream dual_slot_switch alloc; do
  timeout 200 build/tests/gpuos_gpu_$t > "$o/gpu_$t.log" 2>&1; echo "$t rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_$t.log")  ($SECONDS s)"
done
for c in '*hung tile*' '*deadlines per task*' '*shutdown that cannot drain*' '*graph instance whose launch hangs*' '*hung link*' '*long links*'; do
  timeout 120 build/tests/gpuos_gpu_watchdog "-tc=$c" >> "$o/gpu_watchdog.log" 2>&1; echo "watchdog $c rc=$?"; done
for c in '*a trap in a loaded operator*' '*an illegal address in a loaded operator*' '*during a generation switch*' '*during alias flips*' '*during heap requests*' '*in a graph node*' '*blocked on a full queue*'; do
  timeout 120 build/tests/gpuos_gpu_faults "-tc=$c" >> "$o/gpu_faults.log" 2>&1; echo "faults $c rc=$?"; done
echo "end $SECONDS s"
