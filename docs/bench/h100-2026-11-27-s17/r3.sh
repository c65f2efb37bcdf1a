#!/usr/bin/env bash
# Call 3: Llama ops awaiting their inputs with an L2 prefetch of the tile's rows (pf), and with the
# streamed loads marked evict-first (pf2), against main's ops; alternating, one call.
set -u
R=$OUT/r3; mkdir -p $R
cd .gpu && tar xJf pkg.tar.xz && cd ..
python3 -m pip install -q --no-deps --target /tmp/site $(ls $PWD/.gpu/whl/*.whl) > $R/pip.log 2>&1
cd examples/llama
python3 make_weights.py /tmp/w1b --preset 1b > $R/weights.log 2>&1
for i in 1 2; do for v in main pf pf2; do
  ops=ops; [ $v != main ] && ops=../../.gpu/ops_$v
  PYTHONPATH=/tmp/site timeout 90 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 256 --ops-dir $ops --json $R/dec_${v}_$i.json > $R/dec_${v}_$i.log 2>&1
done; done
for v in pf pf2; do
PYTHONPATH=/tmp/site timeout 90 python3 trace_step.py /tmp/w1b 1 --steps 5 --ops ../../.gpu/ops_$v --raw $R/raw_$v.npy --json $R/trace_$v.json > $R/trace_$v.txt 2>&1
done
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
