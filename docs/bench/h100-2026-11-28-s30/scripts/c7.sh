#!/usr/bin/env bash
# Session 15, call 7 (the same machine): the watchdog's and the faults' suites, each case in its own
# process (as tests/meson.build runs them).
R=$PWD; [ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }; mkdir -p build && tar xJf .gpu/s15/bin.tar.xz -C build; cd /work/main; for t in watchdog faults; do build/tests/gpuos_gpu_$t -ltc 2>/dev/null | grep -v "^\[doctest\]\|^=====" | grep -v '^$' > /tmp/cases_$t.txt; while IFS= read -r c; do timeout 100 build/tests/gpuos_gpu_$t "-tc=$c" >> $OUT/gpu_$t.log 2>&1; echo "$t rc=$? [$c] ($SECONDS s)"; done < /tmp/cases_$t.txt; done 2>&1 | tee $OUT/cases.txt | cut -c1-150
