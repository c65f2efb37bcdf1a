#!/usr/bin/env bash
# Call 1: graphs suite (await_inputs), A/B of the Llama ops awaiting their inputs, all suites, python.
set -u
R=$OUT/r1; mkdir -p $R
cd .gpu && tar xJf pkg.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $R/gpu.txt
timeout 60 .gpu/g/tests/gpuos_gpu_graphs > $R/graphs.log 2>&1; echo "graphs rc=$?" >> $R/gpu.txt
GPUOS_GRAPH_PLACED=0 timeout 60 .gpu/g/tests/gpuos_gpu_graphs > $R/graphs_unplaced.log 2>&1; echo "graphs unplaced rc=$?" >> $R/gpu.txt
WHL=$(ls $PWD/.gpu/whl/*.whl)
python3 -m pip install -q --no-deps --target /tmp/site $WHL > $R/pip.log 2>&1
cp -r examples/llama/ops /tmp/ops_main
patch -p1 < docs/bench/h100-2026-11-27-s16/llama_await.diff > $R/patch.log 2>&1
cp -r examples/llama/ops /tmp/ops_await
cd examples/llama
python3 make_weights.py /tmp/w1b --preset 1b > $R/weights.log 2>&1
for i in 1 2; do for v in main await; do
  PYTHONPATH=/tmp/site timeout 90 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 256 --ops-dir /tmp/ops_$v --json $R/dec_${v}_$i.json > $R/dec_${v}_$i.log 2>&1
done; done
PYTHONPATH=/tmp/site timeout 90 python3 trace_step.py /tmp/w1b 1 --steps 5 --ops /tmp/ops_await --json $R/trace_await.json > $R/trace_await.txt 2>&1
cd ../..
mv .gpu/g/tests/gpuos_gpu_soak /tmp/ 2>/dev/null
STEP_TIMEOUT=150 bash scripts/gpu_run.sh $R/s .gpu/g tests > $R/tests.txt 2>&1
WHEEL=$WHL STEP_TIMEOUT=200 bash scripts/gpu_run.sh $R/py .gpu/g python > $R/python.txt 2>&1
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
