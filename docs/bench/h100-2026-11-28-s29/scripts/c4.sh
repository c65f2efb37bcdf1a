#!/usr/bin/env bash
# Session 14, call 4: the projections' weights laid out tile-major at load (each warp load 512
# consecutive bytes): through a ring of one bulk copy a round (TMA, ops_t) and by the register path
# (ops_r), against HEAD's operators on row-major weights; the Llama tests (ops_t); traces.
set -u
o=${OUT:?}
R=$PWD
P=$R/.gpu/s14
[ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
[ -f /tmp/w1b/config.json ] || (python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1; echo "weights done at $SECONDS s") &
cd /work/main/examples/llama
timeout 200 python3 -m pytest -q -x tests > "$o/pytest_llama.log" 2>&1; echo "llama tests rc $? $(tail -1 "$o/pytest_llama.log") ($SECONDS s)"
wait
run() {  # name ops
  timeout 100 python3 bench_decode.py /tmp/w1b --skip-torch --batches ${B:-1} --new 128 --ops-dir $2 --json "$o/dec_$1.json" > "$o/dec_$1.log" 2>&1
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" "$o/dec_$1.log" | tr '\n' ' ')"
}
run t $P/ops_t
run r $P/ops_r
run head0 $P/ops_head
run t2 $P/ops_t
run r2 $P/ops_r
timeout 90 python3 trace_step.py /tmp/w1b 1 --ops $P/ops_t > "$o/trace_t.txt" 2>&1; echo "trace t rc $?"; head -14 "$o/trace_t.txt" | tail -8
git -C /work/main show HEAD:examples/llama/trace_step.py > trace_head.py
timeout 90 python3 trace_head.py /tmp/w1b 1 --ops $P/ops_r > "$o/trace_r.txt" 2>&1; echo "trace r rc $?"; head -14 "$o/trace_r.txt" | tail -8
cd $o && tar czf all.tgz *.log *.txt *.json 2>/dev/null; rm -f *.log *.json
echo "end $SECONDS s"
