#!/usr/bin/env bash
# Session 11, call 9 (experiment): inline only some Llama operators (GPUOS_INLINE_ONLY, an experimental build ig5).
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
rm -rf /tmp/site_ig5; python3 -m pip install -q --no-deps --target /tmp/site_ig5 $P/ig5/*.whl >> "$o/pip.log" 2>&1
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
cd examples/llama
for i in 1 2; do for v in off all proj noattn; do
  inl=1; only=""
  case $v in off) inl=0;; proj) only="llama_qkv,llama_resid";; noattn) only="llama_qkv,llama_resid,llama_swiglu,llama_embed,llama_logits";; esac
  if [ -n "$only" ]; then export GPUOS_INLINE_ONLY=$only; else unset GPUOS_INLINE_ONLY; fi
  GPUOS_INLINE_OPERATORS=$inl PYTHONPATH=/tmp/site_ig5 timeout 150 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --json "$o/dec_${v}_$i.json" > "$o/dec_${v}_$i.log" 2>&1
  echo "== dec $v $i ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_${v}_$i.log" | tr '\n' ' ')"
done; done
export GPUOS_INLINE_ONLY=llama_qkv,llama_resid
PYTHONPATH=/tmp/site_ig5 timeout 90 python3 trace_step.py /tmp/w1b 1 > "$o/trace_proj.txt" 2>&1; sed -n 3,12p "$o/trace_proj.txt"
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
