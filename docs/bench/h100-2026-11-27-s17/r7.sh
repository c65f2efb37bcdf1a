#!/usr/bin/env bash
# Call 7 (image 2 x 128): the residual projections in tiles of 8 rows with four blocks of 32 k ahead
# (256 tiles instead of 128; .gpu/llama_r8 = examples/llama with those operators and the engine's tile
# counts) against main's: the Llama GPU tests on them, then alternating decode rounds and a trace.
set -u
R=$OUT/r7; mkdir -p $R
cd .gpu && tar xJf pkg.tar.xz && cd ..
python3 -m pip install -q --no-deps --target /tmp/site $(ls $PWD/.gpu/whl/*.whl) > $R/pip.log 2>&1
(cd .gpu/llama_r8/tests && PYTHONPATH=/tmp/site timeout 150 python3 -m pytest -q -rs -p no:cacheprovider . > $R/pytest_llama_r8.log 2>&1; echo "rc=$?" >> $R/pytest_llama_r8.log)
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $R/weights.log 2>&1
for i in 1 2; do for v in main r8; do
  dir=examples/llama; [ $v = r8 ] && dir=.gpu/llama_r8
  (cd $dir && PYTHONPATH=/tmp/site timeout 90 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 256 --json $R/dec_${v}_$i.json > $R/dec_${v}_$i.log 2>&1)
done; done
(cd .gpu/llama_r8 && PYTHONPATH=/tmp/site timeout 90 python3 trace_step.py /tmp/w1b 1 --steps 5 --raw $R/raw_r8.npy --json $R/trace_r8.json > $R/trace_r8.txt 2>&1)
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
