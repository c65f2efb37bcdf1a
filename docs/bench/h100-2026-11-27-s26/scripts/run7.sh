#!/usr/bin/env bash
# Session 11, call 7: builds no longer block readers: online switch suite (new case), serve_check with inlining on and off, Llama tests, a few suites again.
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
rm -rf /work/ig; mkdir -p /work/ig && tar xJf $P/ig_src.tar.xz -C /work/ig && mkdir -p /work/ig/build && tar xJf $P/igbin.tar.xz -C /work/ig/build
rm -rf /tmp/site_ig4; python3 -m pip install -q --no-deps --target /tmp/site_ig4 $P/ig4/*.whl >> "$o/pip.log" 2>&1
(cd /work/ig && for t in online_switch dual_slot_switch runtime ops graphs; do
  timeout 300 build/tests/gpuos_gpu_$t > "$o/gpu_$t.log" 2>&1; echo "$t rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_$t.log")  ($SECONDS s)"
done; grep -h "answered during" "$o/gpu_online_switch.log")
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
cd /work/ig/examples/llama
for inl in 1 0; do
  GPUOS_INLINE_OPERATORS=$inl PYTHONPATH=/tmp/site_ig4 timeout 280 python3 serve_check.py /tmp/w1b --json "$o/serve_inl$inl.json" > "$o/serve_inl$inl.log" 2>&1; echo "serve inline=$inl rc=$? ($SECONDS s)"
  python3 -c "import json; d=json.load(open('$o/serve_inl$inl.json')); print(d['ok'], d['swap_events'], d['reference_run'].get('wall_s'), d['swap_run'].get('wall_s'), d['identical_answers'])" 2>&1 | tail -2
done
PYTHONPATH=/tmp/site_ig4 timeout 200 python3 -m pytest -q tests > "$o/pytest_llama.log" 2>&1; echo "llama rc $? $(tail -1 "$o/pytest_llama.log")"
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
