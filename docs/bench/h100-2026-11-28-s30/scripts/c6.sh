#!/usr/bin/env bash
# Session 15, call 6 (the machine c5 left warm): the watchdog's and the faults' suites in one process
# each (wrong: a case that ends the kernel poisons the context for the cases after it; the test command
# runs each case in its own process, as call 7 does), and the ops suite inlined.
R=$PWD; [ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }; mkdir -p build && tar xJf .gpu/s15/bin.tar.xz -C build; cd /work/main; for t in watchdog faults; do timeout 140 build/tests/gpuos_gpu_$t > $OUT/gpu_$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[doctest\] test cases' $OUT/gpu_$t.log) ($SECONDS s)"; done; GPUOS_INLINE_OPERATORS=1 timeout 60 build/tests/gpuos_gpu_ops > $OUT/gpu_inl_ops.log 2>&1; echo "inline ops rc=$? $(grep -E '^\[doctest\] test cases' $OUT/gpu_inl_ops.log) ($SECONDS s)"
