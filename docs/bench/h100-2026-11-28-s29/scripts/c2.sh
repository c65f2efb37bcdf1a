#!/usr/bin/env bash
# Session 14, call 2: the errors suite's log; the grid per stage size; the register path with stage
# memory reserved (the carve-out's cost); traces of HEAD's operators and the 3-round ring.
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
timeout 120 build/tests/gpuos_gpu_errors -tce='stage*' > "$o/gpu_errors_rest.log" 2>&1; echo "errors rest rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_errors_rest.log") ($SECONDS s)"
python3 -c "
import gpuos
for s in (0, 32768, 49152, 65536, 81920, 98304):
    i = gpuos.query_device(stage_bytes=s); print('stage', s, 'blocks_per_sm', i['blocks_per_sm'], 'grid', i['grid_blocks'])
" 2>&1 | tee "$o/grid.txt"
wait
cd examples/llama
run() {  # name ops stage
  timeout 100 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --ops-dir $2 ${3:+--stage-bytes $3} --json "$o/dec_$1.json" > "$o/dec_$1.log" 2>&1
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch 1: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" "$o/dec_$1.log")"
}
run head48 $P/ops_head 49152
run s3 $P/ops_s3
run head0 $P/ops_head
timeout 90 python3 trace_step.py /tmp/w1b 1 --ops $P/ops_s3 > "$o/trace_s3.txt" 2>&1; echo "trace s3 rc $?"; head -30 "$o/trace_s3.txt"
git -C /work/main show HEAD:examples/llama/trace_step.py > /tmp/trace_head.py; cp /tmp/trace_head.py ./trace_head.py
timeout 90 python3 trace_head.py /tmp/w1b 1 --ops $P/ops_head > "$o/trace_head.txt" 2>&1; echo "trace head rc $?"; head -30 "$o/trace_head.txt"
cd $o && tar czf all.tgz *.log *.txt *.json 2>/dev/null; rm -f *.log *.json
echo "end $SECONDS s"
