#!/usr/bin/env bash
# mv16 loaded (main) against mv16 built in and inlined into the role loop (experimental build).
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site_main $P/*.whl > "$o/pip.log" 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_bi $P/whl_bi/*.whl >> "$o/pip.log" 2>&1
cp $P/llama/mv_chain.py examples/llama/
cd examples/llama
for i in 1 2; do
  PYTHONPATH=/tmp/site_main timeout 100 python3 mv_chain.py 16 --nostats 2>&1 | grep -v Warn | sed "s/^/main: /" | tee -a "$o/mv_chain.txt"
  PYTHONPATH=/tmp/site_bi timeout 100 python3 mv_chain.py 16 --nostats --builtin 2>&1 | grep -v Warn | sed "s/^/bi: /" | tee -a "$o/mv_chain.txt"
done
PYTHONPATH=/tmp/site_bi timeout 100 python3 mv_chain.py 16 --builtin 2>&1 | grep -v Warn | sed "s/^/bi stats: /" | tee -a "$o/mv_chain.txt"
[ -d /tmp/w1b ] || python3 make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
for v in main bi main bi; do
  PYTHONPATH=/tmp/site_$v timeout 120 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 > "$o/dec_$v.log" 2>&1
  echo "== dec $v ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_$v.log" | tr '\n' ' ')"
done
echo "end $SECONDS s"
