#!/usr/bin/env bash
# Session 22, call 7 (H200, main's wheel at 8eac5af): nokv, qkv without its L2 prefetch of the rows'
# earlier keys and values (which its tail's fence waits for), against main's operators, three rounds.
set -u
o=${OUT:?}
L=/tmp/logs7; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s22
python3 -m pip install -q --no-deps --target /tmp/site $P/whl_main/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir round
  (cd $2 && timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$3.json > $L/dec_$1_$3.log 2>&1)
  echo "== $1_$3 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$3.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do run m $R/examples/llama $k; run nokv $P/v/nokv $k; done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
