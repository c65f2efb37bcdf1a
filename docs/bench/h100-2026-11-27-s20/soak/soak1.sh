#!/usr/bin/env bash
# The soak across three calls on one machine: this call starts it in a session of its own (it outlives
# the call), then waits; soak2.sh waits; soak3.sh waits for its end. Logs under /tmp/soak, copied to $OUT.
set -u
mkdir -p /tmp/soak
cd .gpu && tar xJf pkg_soak.tar.xz && cd ..
cp .gpu/g/tests/gpuos_gpu_soak /tmp/soak/
nvidia-smi --query-gpu=name,driver_version --format=csv > /tmp/soak/gpu.txt 2>&1
date -u +%FT%TZ > /tmp/soak/start.txt
setsid bash -c "GPUOS_SOAK_SECONDS=${SOAK_S:-1620} stdbuf -oL -eL /tmp/soak/gpuos_gpu_soak -d > /tmp/soak/soak.log 2>&1; echo \"rc=\$? at \$(date -u +%FT%TZ)\" >> /tmp/soak/soak.log" < /dev/null > /dev/null 2>&1 &
sleep ${WAIT_S:-550}
cp /tmp/soak/*.txt /tmp/soak/soak.log $OUT/
grep -c "soak check" /tmp/soak/soak.log; tail -c 1500 /tmp/soak/soak.log
