#!/usr/bin/env bash
# For the next session's first device call (packed at b2f395c: .gpu/pkg_next2.tar.xz = li (line tables,
# tests only), g (main build), x1 (bench_graph with no watchdog records in the chain's fast path)):
# chain A/B main vs x1 (issue 17), racecheck on 2 SMs over the graphs suite case by case (its waits and
# sizes now scaled), then the first stream case alone under memcheck with a thread dump on timeout.
set -u
R=$OUT/next2; mkdir -p $R
cd .gpu && tar xJf pkg_next2.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
for rep in 1 2; do for v in g x1; do
  exe=.gpu/x1/bench_graph; [ $v = g ] && exe=.gpu/g/bench/bench_graph
  timeout 60 $exe --chain 256,1024 --dag-nodes 1000 --json $R/bg_${v}_$rep.json > $R/bg_${v}_$rep.log 2>&1
done; done
for t in graphs online_switch dual_slot_switch alloc ops; do  # changed since their last full-speed run
  timeout 100 .gpu/g/tests/gpuos_gpu_$t > $R/t_$t.log 2>&1; echo "rc=$?" >> $R/t_$t.log
done
# doctest wildcards: ? for the spaces (SANITIZE_ARGS is split on spaces)
for tc in "submit_after*" "lanes*" "*long?chain*" "*launch?runs?after*" "*arguments?set*" "*generation?switch*" "*suspend?and?resume*" "*ring?of?64*" "*instances*" "*awaits*" "*random?DAGs*"; do
  [ $SECONDS -gt 420 ] && break
  n=$(echo "$tc" | tr -dc 'a-z_'); 
  SANITIZE_TOOLS=racecheck SANITIZE_SMS=2 SANITIZE_SUITES="graphs" SANITIZE_ARGS="-d -tc=$tc" STEP_TIMEOUT=90 \
    bash scripts/gpu_run.sh $R/rg_$n .gpu/li sanitize > /dev/null 2>&1
  cd $OUT && tar czf next2_part.tgz next2 && cd - > /dev/null
done
SANITIZE_TOOLS=memcheck SANITIZE_SUITES="stream" SANITIZE_ARGS="-d -tc=tasks?on?a?stream*" STEP_TIMEOUT=$((570 - SECONDS)) \
  bash scripts/gpu_run.sh $R/ms .gpu/li sanitize > /dev/null 2>&1
echo "end $SECONDS s" > $R/times.txt
cd $OUT && rm -f next2_part.tgz && tar czf next2.tgz next2 && rm -rf next2
