#!/usr/bin/env bash
# Call 3: attention with every load of a chunk issued at once and a one-pass combination (working tree,
# N) against main's operators (A) and main's with the values asked for with the keys (F): the Llama GPU
# tests and the reference check on N, alternating decode rounds, a trace of N, bench_decode with the
# torch baselines on N; then memcheck and synccheck over the GPU suites while time is left.
set -u
R=$OUT/r3; mkdir -p $R
cd .gpu && tar xJf pkg3.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
python3 -m pip install -q --no-deps --target /tmp/site $(ls $PWD/.gpu/whl_main/*.whl) > $R/pip.log 2>&1
export PYTHONPATH=/tmp/site
(cd examples/llama/tests && timeout 150 python3 -m pytest -q -rs -p no:cacheprovider . > $R/pytest_llama.log 2>&1; echo "rc=$?" >> $R/pytest_llama.log)
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $R/weights.log 2>&1
python3 examples/llama/make_weights.py /tmp/wtiny --preset tiny >> $R/weights.log 2>&1
(cd examples/llama && timeout 60 python3 check_reference.py /tmp/wtiny --json $R/check_N.json > $R/check_N.log 2>&1; echo "rc=$?" >> $R/check_N.log)
for i in 1 2 3; do for v in A F N; do
  dir=examples/llama; [ $v != N ] && dir=.gpu/llama_$v
  s=$(date +%s)
  (cd $dir && timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 256 --json $R/dec_${v}_$i.json > $R/dec_${v}_$i.log 2>&1)
  echo "$v $i rc=$? $(( $(date +%s) - s )) s" >> $R/times.txt
done; done
(cd examples/llama && timeout 60 python3 trace_step.py /tmp/w1b 1 --steps 5 --raw $R/raw_N.npy --json $R/trace_N.json > $R/trace_N.txt 2>&1)
s=$(date +%s)
(cd examples/llama && timeout 150 python3 bench_decode.py /tmp/w1b --json $R/bench_llama.json > $R/bench_llama.log 2>&1; echo "rc=$?" >> $R/bench_llama.log)
echo "bench_llama $(( $(date +%s) - s )) s" >> $R/times.txt
echo "elapsed before sanitizers $SECONDS s" >> $R/times.txt
cd $OUT && tar czf r3a.tgz r3 && cd - > /dev/null
for tool in memcheck synccheck; do
  [ $SECONDS -lt 420 ] || { echo "skipped $tool at $SECONDS s" >> $R/times.txt; continue; }
  SANITIZE_TOOLS=$tool STEP_TIMEOUT=15 bash scripts/gpu_run.sh $R/$tool .gpu/g sanitize > $R/$tool.txt 2>&1
done
echo "end $SECONDS s" >> $R/times.txt
cd $OUT && rm -f r3a.tgz && tar czf r3.tgz r3 && rm -rf r3
