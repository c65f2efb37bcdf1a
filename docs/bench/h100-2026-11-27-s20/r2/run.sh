#!/usr/bin/env bash
# c14da58: the first stream case under memcheck with a dump of the test's threads; racecheck on the two
# graphs cases that ran past the unscaled 30 s stop; full-speed suites touched by the control limit.
set -u
R=$OUT/next3; mkdir -p $R
cd .gpu && tar xJf pkg_next3.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
save() { cd $OUT && tar czf next3_part.tgz next3 && cd - > /dev/null; }
GPUOS_TEST_SCALE=100 GPUOS_DEADLINE_SCALE=100 GPUOS_SM_BUDGET=8 timeout 60 .gpu/li/tests/gpuos_gpu_stream -d "-tc=tasks?on?a?stream*" > $R/stream_plain_scaled.log 2>&1; echo "rc=$?" >> $R/stream_plain_scaled.log
SANITIZE_TOOLS=memcheck SANITIZE_SMS=8 SANITIZE_SUITES="stream" SANITIZE_ARGS="-d -tc=tasks?on?a?stream*" STEP_TIMEOUT=60 \
  bash scripts/gpu_run.sh $R/ms .gpu/li sanitize > /dev/null 2>&1
save
GPUOS_TEST_SCALE=100 GPUOS_DEADLINE_SCALE=100 GPUOS_SM_BUDGET=8 timeout 60 compute-sanitizer --tool memcheck --check-api-memory-access no \
  .gpu/li/tests/gpuos_gpu_stream -d "-tc=tasks?on?a?stream*" > $R/ms_noapi.log 2>&1; echo "rc=$?" >> $R/ms_noapi.log
save
for tc in "*instances*" "*suspend?and?resume*"; do
  [ $SECONDS -gt 380 ] && break
  n=$(echo "$tc" | tr -dc 'a-z_')
  SANITIZE_TOOLS=racecheck SANITIZE_SMS=2 SANITIZE_SUITES="graphs" SANITIZE_ARGS="-d -tc=$tc" STEP_TIMEOUT=100 \
    bash scripts/gpu_run.sh $R/rg_$n .gpu/li sanitize > /dev/null 2>&1
  save
done
for t in graphs suspend runtime stream; do
  [ $SECONDS -gt 500 ] && break
  timeout 80 .gpu/g/tests/gpuos_gpu_$t > $R/t_$t.log 2>&1; echo "rc=$?" >> $R/t_$t.log
done
echo "end $SECONDS s" > $R/times.txt
cd $OUT && rm -f next3_part.tgz && tar czf next3.tgz next3 && rm -rf next3
