#!/usr/bin/env bash
# Session 11, call 5: the Llama step and the mv chain, main against the opt-in build with inlining on (ig3) and off (ig3off); cold load times; the 1B reference check.
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$o/gpu.txt"
for v in main ig3; do [ -d /tmp/site_$v ] || python3 -m pip install -q --no-deps --target /tmp/site_$v $P/$v/*.whl >> "$o/pip.log" 2>&1; done
for i in 0 1; do GPUOS_INLINE_OPERATORS=$i PYTHONPATH=/tmp/site_ig3 timeout 100 python3 $P/genload2.py examples/llama/ops 2>&1 | grep -v Warn | tee -a "$o/genload.txt"; done
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
echo "weights at $SECONDS s"
cp $P/mv_chain.py examples/llama/
cd examples/llama
for i in 1 2; do for v in main ig3 ig3off; do
  s=$v; inl=1; case $v in ig3off) s=ig3; inl=0;; esac
  GPUOS_INLINE_OPERATORS=$inl PYTHONPATH=/tmp/site_$s timeout 100 python3 mv_chain.py 16 --nostats 2>&1 | grep -v Warn | sed "s/^/$v: /" | tee -a "$o/mv_chain.txt"
done; done
for i in 1 2; do for v in main ig3 ig3off; do
  s=$v; inl=1; case $v in ig3off) s=ig3; inl=0;; esac
  GPUOS_INLINE_OPERATORS=$inl PYTHONPATH=/tmp/site_$s timeout 150 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,4,8 --new 128 --json "$o/dec_${v}_$i.json" > "$o/dec_${v}_$i.log" 2>&1
  echo "== dec $v $i ($SECONDS s): $(grep -oE "gpuos batch [148]: \{'ms_per_step': [0-9.]{5}" "$o/dec_${v}_$i.log" | tr '\n' ' ')"
done; done
PYTHONPATH=/tmp/site_ig3 timeout 90 python3 trace_step.py /tmp/w1b 1 > "$o/trace_ig3.txt" 2>&1; sed -n 1,12p "$o/trace_ig3.txt"
PYTHONPATH=/tmp/site_ig3 timeout 200 python3 check_reference.py /tmp/w1b --json "$o/check_1b.json" > "$o/check_1b.log" 2>&1; echo "check rc $?"; grep -E '"same_tokens"|"ok_|rc ' "$o/check_1b.log" | head
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
