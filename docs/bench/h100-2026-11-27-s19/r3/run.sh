#!/usr/bin/env bash
# Call 3: watchdog-record store flavors A/B on the chain (main: st.volatile = STRONG.SYS; v1: relaxed.gpu;
# v2: weak), the changed suites at full speed, racecheck graphs with durations, memcheck stream.
set -u
R=$OUT/c3; mkdir -p $R
cd .gpu && tar xJf pkg_c3.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
for rep in 1 2; do
  for v in main v1 v2; do
    exe=.gpu/$v/bench_graph; [ $v = main ] && exe=.gpu/g/bench/bench_graph
    timeout 80 $exe --chain 256,1024 --dag-nodes 1000 --json $R/bg_${v}_$rep.json > $R/bg_${v}_$rep.log 2>&1
  done
done
echo "ab $SECONDS" >> $R/times.txt
for t in graphs ops alloc suspend dual_slot_switch online_switch; do
  timeout 100 .gpu/g/tests/gpuos_gpu_$t > $R/t_$t.log 2>&1; echo "rc=$?" >> $R/t_$t.log
done
echo "suites $SECONDS" >> $R/times.txt
cd $OUT && tar czf c3_a.tgz c3 && cd - > /dev/null
SANITIZE_TOOLS=racecheck SANITIZE_SMS=2 SANITIZE_SUITES="graphs" SANITIZE_ARGS="-d" STEP_TIMEOUT=140 bash scripts/gpu_run.sh $R/rg .gpu/li sanitize > /dev/null 2>&1
echo "rg $SECONDS" >> $R/times.txt
cd $OUT && rm -f c3_a.tgz && tar czf c3_b.tgz c3 && cd - > /dev/null
[ $SECONDS -lt 420 ] && SANITIZE_TOOLS=memcheck SANITIZE_SUITES="stream" SANITIZE_ARGS="-d" STEP_TIMEOUT=$((560 - SECONDS)) bash scripts/gpu_run.sh $R/ms .gpu/li sanitize > /dev/null 2>&1
echo "end $SECONDS s" >> $R/times.txt
cd $OUT && rm -f c3_b.tgz && tar czf c3.tgz c3 && rm -rf c3
