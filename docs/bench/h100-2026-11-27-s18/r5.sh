#!/usr/bin/env bash
# Call 5: synccheck over the suites that did not finish in 15 s (online_switch, stream), racecheck over
# the runtime suite, longer caps (GPUOS_TEST_SCALE 100).
set -u
R=$OUT/r5; mkdir -p $R
cd .gpu && tar xJf pkg_g.tar.xz && cd ..
SANITIZE_TOOLS=synccheck SANITIZE_SUITES="online_switch stream" STEP_TIMEOUT=80 bash scripts/gpu_run.sh $R/sc .gpu/g sanitize > /dev/null 2>&1
SANITIZE_TOOLS=racecheck SANITIZE_SUITES="runtime" STEP_TIMEOUT=130 bash scripts/gpu_run.sh $R/rc .gpu/g sanitize > /dev/null 2>&1
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
