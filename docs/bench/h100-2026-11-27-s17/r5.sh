#!/usr/bin/env bash
# Call 5: the 2 x 128-register image (g128) against 4 x 64 (g): dispatch, throughput, graph and large
# benchmarks, one after the other in one call; then every GPU suite on g128.
set -u
R=$OUT/r5; mkdir -p $R
cd .gpu && tar xJf pkg.tar.xz && cd ..
mv .gpu/g/tests/gpuos_gpu_soak .gpu/g128/tests/gpuos_gpu_soak /tmp/ 2>/dev/null
for b in g g128; do
  STEP_TIMEOUT=120 bash scripts/gpu_run.sh $R/b_$b .gpu/$b dispatch throughput graph large > $R/bench_$b.txt 2>&1
done
STEP_TIMEOUT=150 bash scripts/gpu_run.sh $R/t_g128 .gpu/g128 tests > $R/tests_g128.txt 2>&1
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
