#!/usr/bin/env bash
# Call 2: raw traces of a step, main ops vs awaiting ops; racecheck after the pacing/work_entry fixes.
set -u
R=$OUT/r2; mkdir -p $R
cd .gpu && tar xJf pkg.tar.xz && cd ..
python3 -m pip install -q --no-deps --target /tmp/site $(ls $PWD/.gpu/whl/*.whl) > $R/pip.log 2>&1
cd examples/llama
python3 make_weights.py /tmp/w1b --preset 1b > $R/weights.log 2>&1
for v in main await; do
  ops=ops; [ $v = await ] && ops=../../.gpu/ops_await
  PYTHONPATH=/tmp/site timeout 90 python3 trace_step.py /tmp/w1b 1 --steps 5 --ops $ops --raw $R/raw_$v.npy --json $R/trace_$v.json > $R/trace_$v.txt 2>&1
done
cd ../..
timeout 240 compute-sanitizer --tool racecheck --print-limit 50 .gpu/g/tests/gpuos_gpu_runtime > $R/racecheck_runtime.log 2>&1; echo "rc=$?" >> $R/racecheck_runtime.log
timeout 150 compute-sanitizer --tool racecheck --print-limit 50 .gpu/g/tests/gpuos_gpu_graphs -tc="*chain*" > $R/racecheck_graphs_chain.log 2>&1; echo "rc=$?" >> $R/racecheck_graphs_chain.log
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
