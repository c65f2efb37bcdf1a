#!/usr/bin/env bash
# Session 17, call 4: when the projections ask for their first weights. v/base_late: HEAD's operators
# asking after the await; v/v3a: the working tree asking after the flagged rows arrived (awaiting
# operators as before); v/v3b: the working tree asking after its inputs arrived in every operator;
# against HEAD's operators (v/base), alternating.
set -u
o=${OUT:?}
L=/tmp/logs4; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s17
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir
  (cd $P/v/$2 && timeout 45 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b; do run base_$k base; run late_$k base_late; run v3a_$k v3a; run v3b_$k v3b; done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
