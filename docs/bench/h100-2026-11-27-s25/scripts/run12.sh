#!/usr/bin/env bash
# The role wait's poll backoff: at most 256 ns (main), 64, 32.
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site_main $P/*.whl > "$o/pip.log" 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_p64 $P/whl_p64/*.whl >> "$o/pip.log" 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_p32 $P/whl_p32/*.whl >> "$o/pip.log" 2>&1
cp $P/llama/mv_chain.py examples/llama/
cd examples/llama
for i in 1 2; do for v in main p64 p32; do
  PYTHONPATH=/tmp/site_$v timeout 100 python3 mv_chain.py 16 --nostats 2>&1 | grep -v Warn | sed "s/^/$v: /" | tee -a "$o/mv_chain.txt"
done; done
[ -d /tmp/w1b ] || python3 make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
for i in 1 2; do for v in main p64 p32; do
  PYTHONPATH=/tmp/site_$v timeout 120 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --json "$o/dec_${v}_$i.json" > "$o/dec_${v}_$i.log" 2>&1
  echo "== dec $v $i ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_${v}_$i.log" | tr '\n' ' ')"
done; done
echo "end $SECONDS s"
