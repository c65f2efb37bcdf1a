#!/usr/bin/env bash
# Session 17, call 3: v/v3 (the working tree: flagged words polled directly, the LM head reading x
# released by the last llama_resid) and v/v3a (the same, the first weights asked for after the rows
# arrived) against HEAD's operators (v/base), alternating; trace; the Llama tests.
set -u
o=${OUT:?}
L=/tmp/logs3; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s17
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
mkdir -p /tmp/b && tar xJf $P/bin.tar.xz -C /tmp/b && ln -sfn $R /work/main 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site
(cd examples/llama && timeout 90 python3 -m pytest -q -x tests/test_llama_gpu.py -k "test_tiny_model_matches_transformers and weights" > $L/pytest_smoke.log 2>&1; echo "smoke rc $? $(tail -1 $L/pytest_smoke.log) ($SECONDS s)" | tee -a $L/summary.txt); pack
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir
  (cd $P/v/$2 && timeout 45 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b; do run base_$k base; run v3_$k v3; run v3a_$k v3a; done
(cd examples/llama && timeout 60 python3 trace_step.py /tmp/w1b 1 --pos 40 > $L/trace_40.txt 2>&1; echo "trace rc $? ($SECONDS s)" | tee -a $L/summary.txt); pack
(cd examples/llama && timeout 200 python3 -m pytest -q tests/test_llama_gpu.py > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt); pack
(cd examples/llama && timeout 90 python3 debug_layers.py /tmp/w1b > $L/debug_layers.log 2>&1; echo "debug_layers rc $? ($SECONDS s)" | tee -a $L/summary.txt); pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
