#!/usr/bin/env bash
# Session 14, call 3: the stage test; the projections' weights through a ring of bulk copies (TMA, 5 and
# 4 rounds) against the register path (HEAD's operators); the Llama tests; traces.
set -u
o=${OUT:?}
R=$PWD
P=$R/.gpu/s14
[ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }
mkdir -p build && tar xJf $P/bin.tar.xz -C build
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
[ -f /tmp/w1b/config.json ] || (python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1; echo "weights done at $SECONDS s") &
cd /work/main
timeout 120 build/tests/gpuos_gpu_errors -tc='stage*' > "$o/gpu_errors_stage.log" 2>&1; echo "errors stage rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_errors_stage.log") ($SECONDS s)"
cd examples/llama
timeout 200 python3 -m pytest -q -x tests > "$o/pytest_llama.log" 2>&1; echo "llama tests rc $? $(tail -1 "$o/pytest_llama.log") ($SECONDS s)"
wait
run() {  # name ops stage
  timeout 100 python3 bench_decode.py /tmp/w1b --skip-torch --batches ${B:-1} --new 128 --ops-dir $2 ${3:+--stage-bytes $3} --json "$o/dec_$1.json" > "$o/dec_$1.log" 2>&1
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" "$o/dec_$1.log" | tr '\n' ' ')"
}
run t5 $P/ops_t5
run head0 $P/ops_head
run t4 $P/ops_t4
run t5b $P/ops_t5
run head0b $P/ops_head
B=1,8 run t5c $P/ops_t5
timeout 90 python3 trace_step.py /tmp/w1b 1 --ops $P/ops_t5 > "$o/trace_t5.txt" 2>&1; echo "trace t5 rc $?"; head -14 "$o/trace_t5.txt" | tail -8
cd $o && tar czf all.tgz *.log *.txt *.json 2>/dev/null; rm -f *.log *.json
echo "end $SECONDS s"
