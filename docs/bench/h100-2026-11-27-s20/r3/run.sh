#!/usr/bin/env bash
# Tests at 0b?: the first stream case under memcheck, unstripped, with a dump of the test's threads; racecheck
# on the graphs cases "instances" (now scaled) and "suspend and resume" with longer limits.
set -u
R=$OUT/next4; mkdir -p $R
cd .gpu && tar xJf pkg_next4.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
save() { cd $OUT && tar czf next4_part.tgz next4 && cd - > /dev/null; }
SANITIZE_TOOLS=memcheck SANITIZE_SMS=8 SANITIZE_SUITES="stream" SANITIZE_ARGS="-d -tc=tasks?on?a?stream*" STEP_TIMEOUT=50 \
  bash scripts/gpu_run.sh $R/ms .gpu/li sanitize > /dev/null 2>&1
save
for tc in "*instances*" "*suspend?and?resume*"; do
  n=$(echo "$tc" | tr -dc 'a-z_')
  SANITIZE_TOOLS=racecheck SANITIZE_SMS=2 SANITIZE_SUITES="graphs" SANITIZE_ARGS="-d -tc=$tc" STEP_TIMEOUT=$(( (540 - SECONDS) / 2 > 200 ? 200 : (540 - SECONDS) / 2 )) \
    bash scripts/gpu_run.sh $R/rg_$n .gpu/li sanitize > /dev/null 2>&1
  save
done
echo "end $SECONDS s" > $R/times.txt
cd $OUT && rm -f next4_part.tgz && tar czf next4.tgz next4 && rm -rf next4
