#!/usr/bin/env bash
# Session 27, call 2 (H200): main's example (m) against the engine's L2 prefetch sizes and attention's
# parts, bench_decode --skip-torch batch 1, three alternating rounds: h8 / h16 (the last down projection
# asks L2 for the LM head's top 8 / 16 MiB, the tiles its first claims take), q2 / q8 (each down
# projection asks for 2 / 8 MiB of the next layer's qkv weights instead of 4), g8 / g16 (the o
# projection asks for 8 / 16 MiB of gate/up's instead of 12), p1 (attention in one tile per row and
# head, whatever the cache's length). Then traces at position 40 of m and h16.
set -u
o=${OUT:?}
L=/tmp/logs2; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s42
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
[ -d /tmp/w1b ] || (cd $P/ex_m && python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1)
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # variant round
  (cd $P/ex_$1 && timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in m h8 h16 q2 q8 g8 g16 p1; do run $v $k; done; done
for v in m h16; do
  (cd $P/ex_$v && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_$v.txt 2>&1); echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
