#!/usr/bin/env bash
# Call 2: fine chain stamps (issue 17), then racecheck on 2 SMs (lineinfo build, race fix, deadline scale).
set -u
R=$OUT/c2; mkdir -p $R
cd .gpu && tar xJf pkg_c2.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
timeout 100 .gpu/g_st2/bench/bench_graph --chain 256,1024 --dag-nodes 1000 --json $R/bench_graph_st2.json > $R/bench_graph_st2.log 2>&1
grep -h "chain-stamps" $R/bench_graph_st2.log | sed 's/block [0-9]* //' | sort | uniq -c | sort -rn | head -40 > $R/stamps2.txt
grep -v chain-stamps $R/bench_graph_st2.log > $R/bench_graph_st2.txt; rm $R/bench_graph_st2.log
cd $OUT && tar czf c2_a.tgz c2 && cd - > /dev/null
SANITIZE_TOOLS=racecheck SANITIZE_SMS=2 SANITIZE_SUITES="graphs" STEP_TIMEOUT=100 bash scripts/gpu_run.sh $R/rg .gpu/li sanitize > /dev/null 2>&1
cd $OUT && rm -f c2_a.tgz && tar czf c2_b.tgz c2 && cd - > /dev/null
SANITIZE_TOOLS=racecheck SANITIZE_SMS=2 SANITIZE_SUITES="alloc suspend ops dual_slot_switch online_switch stream" STEP_TIMEOUT=65 bash scripts/gpu_run.sh $R/rc .gpu/li sanitize > /dev/null 2>&1
echo "end $SECONDS s" > $R/times.txt
cd $OUT && rm -f c2_b.tgz && tar czf c2.tgz c2 && rm -rf c2
