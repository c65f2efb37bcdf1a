#!/usr/bin/env bash
# Call 6 (image 2 x 128, d2ba601): the Llama decode benchmark with the torch baselines; the operators
# awaiting their inputs against main's, alternating; the Python, Llama and serve-check suites.
set -u
R=$OUT/r6; mkdir -p $R
cd .gpu && tar xJf pkg.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $R/gpu.txt
WHL=$(ls $PWD/.gpu/whl/*.whl)
python3 -m pip install -q --no-deps --target /tmp/site $WHL > $R/pip.log 2>&1
cd examples/llama
python3 make_weights.py /tmp/w1b --preset 1b > $R/weights.log 2>&1
PYTHONPATH=/tmp/site timeout 300 python3 bench_decode.py /tmp/w1b --json $R/bench_llama.json > $R/bench_llama.log 2>&1
for i in 1 2; do for v in main await; do
  ops=ops; [ $v = await ] && ops=../../.gpu/ops_await
  PYTHONPATH=/tmp/site timeout 90 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 256 --ops-dir $ops --json $R/dec_${v}_$i.json > $R/dec_${v}_$i.log 2>&1
done; done
cd ../..
WHEEL=$WHL STEP_TIMEOUT=200 bash scripts/gpu_run.sh $R/py .gpu/g python llama > $R/python.txt 2>&1
rm -rf $R/py/site
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
