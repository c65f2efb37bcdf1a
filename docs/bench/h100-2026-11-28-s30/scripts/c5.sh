#!/usr/bin/env bash
# Session 15, call 5: the landed build (kernel: claiming items await inside the operator; operators: the
# LM head with two rounds in flight, attention's output sums by position groups): the errors suite, the
# Llama tests, the 1B check against transformers, bench_decode with its baselines, a trace, serve_check.
set -u
o=${OUT:?}
L=/tmp/logs5; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s15
[ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }
mkdir -p build && tar xJf $P/bin.tar.xz -C build
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
[ -f /tmp/w1b/config.json ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
cd /work/main
timeout 60 build/tests/gpuos_gpu_errors > $L/gpu_errors.log 2>&1; echo "errors rc=$? $(grep -E '^\[doctest\] test cases' $L/gpu_errors.log) ($SECONDS s)" | tee -a $L/summary.txt
cd examples/llama
timeout 120 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
timeout 150 python3 check_reference.py /tmp/w1b --json $L/check_1b.json > $L/check_1b.log 2>&1; echo "check rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E '"same_tokens"|"ok_|"forced_same|"mean_' $L/check_1b.json | head -8; pack
timeout 130 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench.log 2>&1; echo "bench rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" $L/bench.log | cut -c1-200 | tee -a $L/summary.txt; pack
timeout 40 python3 trace_step.py /tmp/w1b 1 > $L/trace.txt 2>&1; echo "trace rc $?"; head -14 $L/trace.txt | tail -9; pack
timeout 75 python3 serve_check.py /tmp/w1b --json $L/serve.json > $L/serve.log 2>&1; echo "serve rc=$? ($SECONDS s)" | tee -a $L/summary.txt; python3 -c "import json; d=json.load(open('$L/serve.json')); print(d['ok'], d['swap_events'], d['identical_answers'])" | tee -a $L/summary.txt; pack
echo "end $SECONDS s"
