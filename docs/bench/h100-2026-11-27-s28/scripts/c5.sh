#!/usr/bin/env bash
# Session 13, call 5: the RMSNorm's scale applied to the projections' sums (main ops: x * gain per element,
# the sums' round trip overlapping the first tile) against prev (8e93e50's operators: bf16(bf16(x rs) g));
# the Llama tests, the 1B reference check (the bits change), a trace, the full decode benchmark.
set -u
O=${OUT:?}; o=/tmp/c5; mkdir -p $o
P=$PWD/.gpu/s13
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$o/gpu.txt"
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
[ -d /tmp/w1b ] || (python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1; echo "weights done at $SECONDS s") &
cd examples/llama
timeout 200 python3 -m pytest -q tests > "$o/pytest_llama.log" 2>&1; echo "llama tests rc $? $(tail -1 "$o/pytest_llama.log") ($SECONDS s)"
grep -E "^FAILED|Error" "$o/pytest_llama.log" | head -5
wait
run() {  # name ops
  timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --ops-dir "$2" --json "$o/dec_$1.json" > "$o/dec_$1.log" 2>&1
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" "$o/dec_$1.log" | sed -E "s/'tokens_per_s': [0-9.]+, //" | tr '\n' ' ')"
}
for r in 1 2 3; do
  run prev_$r $P/ops_prev
  run main_$r ops
done
timeout 200 python3 check_reference.py /tmp/w1b --json "$o/check_1b.json" > "$o/check_1b.log" 2>&1; echo "check rc $? ($SECONDS s)"; grep -E '"same_tokens"|"ok_|"forced_same|mean_err|max_abs' "$o/check_1b.json" | tr '\n' ' '; echo
tar czf $O/c5.tgz -C /tmp c5
timeout 90 python3 trace_step.py /tmp/w1b 1 > "$o/trace_main.txt" 2>&1; echo "trace rc $?"; sed -n 4,12p "$o/trace_main.txt" | cut -c1-110
tar czf $O/c5.tgz -C /tmp c5
[ $SECONDS -lt 400 ] && { timeout 170 python3 bench_decode.py /tmp/w1b --batches 1,4,8 --new 128 --json "$o/bench_llama.json" > "$o/bench_llama.log" 2>&1; echo "bench rc=$? ($SECONDS s)"; tail -4 "$o/bench_llama.log"; }
tar czf $O/c5.tgz -C /tmp c5
echo "end $SECONDS s"
