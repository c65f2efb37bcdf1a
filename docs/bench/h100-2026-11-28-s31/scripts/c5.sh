#!/usr/bin/env bash
# Session 16, call 5 (HEAD's kernel): llama::project's one-round loop asks for its rounds with `ask`, as
# the two-round loop does, instead of advancing its own pointer (v/pr, the working tree) against HEAD's
# operators (v/af), alternating; the tiny models against transformers with v/pr first.
set -u
o=${OUT:?}
L=/tmp/logs5; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s16
python3 -m pip install -q --no-deps --target /tmp/site_base $P/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
(cd examples/llama && timeout 60 python3 -m pytest -q -x tests/test_llama_gpu.py -k "matches_transformers" > $L/pytest_tiny.log 2>&1; echo "tiny tests rc $? $(tail -1 $L/pytest_tiny.log) ($SECONDS s)" | tee -a $L/summary.txt); pack
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir
  (cd $P/v/$2 && timeout 40 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b c; do run af_$k af; run pr_$k pr; done
echo "end $SECONDS s"
