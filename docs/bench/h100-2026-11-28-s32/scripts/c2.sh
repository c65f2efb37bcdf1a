#!/usr/bin/env bash
# Session 17, call 2 (the working tree's kernel: GPUOS_OP_FLAGGED_OUTPUTS): llama_resid's outputs flagged
# and fence-free, read flagged by qkv, swiglu, logits and the next llama_resid (v/v2, the working tree;
# v/v2d: without the 32-word watch before the loads) against HEAD's operators (v/base), alternating;
# the flagged-outputs graph test placed and unplaced; trace; the Llama tests.
set -u
o=${OUT:?}
L=/tmp/logs2; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s17
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
mkdir -p /tmp/b && tar xJf $P/bin.tar.xz -C /tmp/b && ln -sfn $R /work/main 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site
(cd examples/llama && timeout 90 python3 -m pytest -q -x tests/test_llama_gpu.py -k "test_tiny_model_matches_transformers and weights" > $L/pytest_smoke.log 2>&1; echo "smoke rc $? $(tail -1 $L/pytest_smoke.log) ($SECONDS s)" | tee -a $L/summary.txt); pack
(cd /tmp/b && timeout 60 ./tests/gpuos_gpu_graphs -tc="graphs: a node's flagged outputs*" > $L/graphs_flag.log 2>&1; echo "flag test placed rc $? ($SECONDS s)" | tee -a $L/summary.txt)
(cd /tmp/b && GPUOS_GRAPH_PLACED=0 timeout 60 ./tests/gpuos_gpu_graphs -tc="graphs: a node's flagged outputs*" > $L/graphs_flag_unplaced.log 2>&1; echo "flag test unplaced rc $? ($SECONDS s)" | tee -a $L/summary.txt); pack
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir
  (cd $P/v/$2 && timeout 45 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b; do run base_$k base; run v2_$k v2; run v2d_$k v2d; done
(cd examples/llama && timeout 60 python3 trace_step.py /tmp/w1b 1 --pos 40 > $L/trace_40.txt 2>&1; echo "trace rc $? ($SECONDS s)" | tee -a $L/summary.txt); pack
(cd examples/llama && timeout 200 python3 -m pytest -q tests/test_llama_gpu.py > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt); pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
