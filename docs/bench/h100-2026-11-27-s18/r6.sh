#!/usr/bin/env bash
# Call 6: GPUOS_SM_BUDGET (the sanitize part now runs the kernel on 8 SMs): gpuos info with it; racecheck
# over every GPU suite, 25 s a suite; then memcheck and synccheck over the stream suite, 60 s each.
set -u
R=$OUT/r6; mkdir -p $R
cd .gpu && tar xJf pkg_g.tar.xz && cd ..
(.gpu/g/tools/gpuos info; GPUOS_SM_BUDGET=8 .gpu/g/tools/gpuos info) > $R/info.txt 2>&1
SANITIZE_TOOLS=racecheck STEP_TIMEOUT=25 bash scripts/gpu_run.sh $R/rc .gpu/g sanitize > /dev/null 2>&1
SANITIZE_TOOLS="memcheck synccheck" SANITIZE_SUITES=stream STEP_TIMEOUT=60 bash scripts/gpu_run.sh $R/ms .gpu/g sanitize > /dev/null 2>&1
