#!/usr/bin/env bash
# Session 11, call 6: serve_check (operators swapped under load) with inlining on and off; the Llama step again, alternating.
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
for v in main ig3; do [ -d /tmp/site_$v ] || python3 -m pip install -q --no-deps --target /tmp/site_$v $P/$v/*.whl >> "$o/pip.log" 2>&1; done
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
cd examples/llama
for inl in 1 0; do
  GPUOS_INLINE_OPERATORS=$inl PYTHONPATH=/tmp/site_ig3 timeout 280 python3 serve_check.py /tmp/w1b --json "$o/serve_inl$inl.json" > "$o/serve_inl$inl.log" 2>&1; echo "serve inline=$inl rc=$? ($SECONDS s)"
  python3 -c "import json; d=json.load(open('$o/serve_inl$inl.json')); print(d['ok'], d['swap_events'], d['reference_run'].get('wall_s'), d['swap_run'].get('wall_s'), d['identical_answers'])" 2>&1 | tail -2
done
for i in 1 2; do for v in main ig3 ig3off; do
  s=$v; inl=1; case $v in ig3off) s=ig3; inl=0;; esac
  GPUOS_INLINE_OPERATORS=$inl PYTHONPATH=/tmp/site_$s timeout 150 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --json "$o/dec_${v}_$i.json" > "$o/dec_${v}_$i.log" 2>&1
  echo "== dec $v $i ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_${v}_$i.log" | tr '\n' ' ')"
done; done
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
