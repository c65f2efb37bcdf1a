#!/usr/bin/env bash
# Call 4: an image of 2 blocks x 128 registers per SM (limits.h) against 4 x 64, with the projections'
# weights 2 or 4 blocks of 32 k ahead per lane; alternating, one call.
set -u
R=$OUT/r4; mkdir -p $R
cd .gpu && tar xJf pkg.tar.xz && cd ..
python3 -m pip install -q --no-deps --target /tmp/site64 $(ls $PWD/.gpu/whl/*.whl) > $R/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site128 $(ls $PWD/.gpu/whl128/*.whl) >> $R/pip.log 2>&1
cd examples/llama
python3 make_weights.py /tmp/w1b --preset 1b > $R/weights.log 2>&1
for i in 1 2; do for v in r64_k2 r128_k2 r128_k4; do
  case $v in r64*) site=/tmp/site64 ;; *) site=/tmp/site128 ;; esac
  ops=ops; [ ${v#*_} = k4 ] && ops=../../.gpu/ops_k4
  PYTHONPATH=$site timeout 90 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 256 --ops-dir $ops --json $R/dec_${v}_$i.json > $R/dec_${v}_$i.log 2>&1
done; done
PYTHONPATH=/tmp/site128 timeout 90 python3 trace_step.py /tmp/w1b 1 --steps 5 --ops ../../.gpu/ops_k4 --raw $R/raw_r128_k4.npy --json $R/trace_r128_k4.json > $R/trace_r128_k4.txt 2>&1
PYTHONPATH=/tmp/site128 timeout 90 python3 trace_step.py /tmp/w1b 1 --steps 5 --raw $R/raw_r128_k2.npy --json $R/trace_r128_k2.json > $R/trace_r128_k2.txt 2>&1
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
