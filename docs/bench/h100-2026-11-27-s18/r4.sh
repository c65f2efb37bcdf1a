#!/usr/bin/env bash
# Call 4 (main at 51133a4 + the test fixes): the graphs and sharing suites; memcheck over the graphs
# suite (its buffers now allocated before the runtime), racecheck over sharing (its progress checks wait
# GPUOS_TEST_SCALE x 20 ms), memcheck over the suites that did not finish in 15 s; the Python and Llama
# suites with the new attention; projections with two rounds of weights in flight while one is
# consumed (db: 2 x 32 k a round, db1: 1 x 32 k) against main's, alternating.
set -u
R=$OUT/r4; mkdir -p $R
cd .gpu && tar xJf pkg4.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
WHL=$(ls $PWD/.gpu/whl_main/*.whl)
python3 -m pip install -q --no-deps --target /tmp/site $WHL > $R/pip.log 2>&1
for t in graphs sharing; do timeout 150 .gpu/g/tests/gpuos_gpu_$t > $R/$t.log 2>&1; echo "rc=$?" >> $R/$t.log; done
SANITIZE_TOOLS=memcheck SANITIZE_SUITES=graphs STEP_TIMEOUT=60 bash scripts/gpu_run.sh $R/mc_graphs .gpu/g sanitize > /dev/null 2>&1
SANITIZE_TOOLS=racecheck SANITIZE_SUITES=sharing STEP_TIMEOUT=60 bash scripts/gpu_run.sh $R/rc_sharing .gpu/g sanitize > /dev/null 2>&1
WHEEL=$WHL STEP_TIMEOUT=200 bash scripts/gpu_run.sh $R/py .gpu/g python llama > $R/python.txt 2>&1
rm -rf $R/py/site
export PYTHONPATH=/tmp/site
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $R/weights.log 2>&1
python3 examples/llama/make_weights.py /tmp/wtiny --preset tiny >> $R/weights.log 2>&1
for v in db db1; do (cd .gpu/llama_$v && timeout 60 python3 check_reference.py /tmp/wtiny --json $R/check_$v.json > $R/check_$v.log 2>&1; echo "rc=$?" >> $R/check_$v.log); done
for i in 1 2 3; do for v in N db db1; do
  dir=examples/llama; [ $v != N ] && dir=.gpu/llama_$v
  (cd $dir && timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 256 --json $R/dec_${v}_$i.json > $R/dec_${v}_$i.log 2>&1)
done; done
echo "before memcheck rest $SECONDS s" >> $R/times.txt
cd $OUT && tar czf r4a.tgz r4 && cd - > /dev/null
[ $SECONDS -lt 380 ] && SANITIZE_TOOLS=memcheck SANITIZE_SUITES="alloc online_switch stream" STEP_TIMEOUT=60 bash scripts/gpu_run.sh $R/mc_rest .gpu/g sanitize > /dev/null 2>&1
echo "end $SECONDS s" >> $R/times.txt
cd $OUT && rm -f r4a.tgz && tar czf r4.tgz r4 && rm -rf r4
