#!/usr/bin/env bash
# Session 25, call 2 (H200): attention one query head a tile in its clean form (hc) against main (m) and
# the measured form (h), three rounds alternating; then hc validated: trace, 1B check, Llama tests,
# bench_decode with its baselines, serve_check.
set -u
o=${OUT:?}
L=/tmp/logs2; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s40
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
cd $P/ex_m && python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # variant round
  (cd $P/ex_$1 && LLAMA_ATTN_UNITS=32 timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in m h hc; do run $v $k; done; done
cd $P/ex_hc
timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_hc.txt 2>&1; echo "trace hc rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_hc.json > $L/check_hc.log 2>&1; echo "check hc rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
(cd tests && timeout 70 python3 -m pytest -q -rs -p no:cacheprovider . > $L/pytest_llama_hc.log 2>&1); echo "llama tests hc rc $? ($SECONDS s): $(tail -1 $L/pytest_llama_hc.log)" | tee -a $L/summary.txt; pack
timeout 150 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench.log 2>&1; echo "bench rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" $L/bench.log | cut -c1-200 | tee -a $L/summary.txt; pack
left=$((585 - SECONDS))
timeout $left python3 serve_check.py /tmp/w1b --json $L/serve.json > $L/serve.log 2>&1; echo "serve rc=$? ($SECONDS s)" | tee -a $L/summary.txt; tail -3 $L/serve.log | cut -c1-300 | tee -a $L/summary.txt
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
