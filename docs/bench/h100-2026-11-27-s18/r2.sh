#!/usr/bin/env bash
# Call 2 (main at 5973e3e + gpu_run.sh SANITIZE_SUITES): the graphs suite placed and unplaced (the case
# that counts an awaiting operator's early calls), then racecheck over every GPU suite with the long
# loops divided by 100 (GPUOS_TEST_SCALE), at most 50 s a suite.
set -u
R=$OUT/r2; mkdir -p $R
cd .gpu && tar xJf pkg_g.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
timeout 150 .gpu/g/tests/gpuos_gpu_graphs > $R/graphs.log 2>&1; echo "rc=$?" >> $R/graphs.log
GPUOS_GRAPH_PLACED=0 timeout 150 .gpu/g/tests/gpuos_gpu_graphs > $R/graphs_unplaced.log 2>&1; echo "rc=$?" >> $R/graphs_unplaced.log
SANITIZE_TOOLS=racecheck STEP_TIMEOUT=50 bash scripts/gpu_run.sh $R/san .gpu/g sanitize > $R/san.txt 2>&1
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
