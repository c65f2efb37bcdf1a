#!/usr/bin/env bash
# Session 13, call 11: attention's values loaded packed and issued up front (vpk) against main: the tile's
# phases (attn_phases.py), the step (two rounds), the 1B reference check with vpk.
set -u
O=${OUT:?}
P=$PWD/.gpu/s13
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/examples/llama
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > /dev/null 2>&1
cd examples/llama
for v in main vpk; do d=ops; [ $v = vpk ] && d=$P/ops_vpk
  echo "== phases $v"; timeout 90 python3 $P/attn_phases.py /tmp/w1b $d 2>&1 | tee $O/attn_phases_$v.txt | grep -E "position|output|total|rows"
done
for r in 1 2; do for v in main vpk; do d=ops; [ $v = vpk ] && d=$P/ops_vpk
  timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --ops-dir $d --json $O/dec_${v}_$r.json > $O/dec_${v}_$r.log 2>&1
  echo "== $v $r: $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" $O/dec_${v}_$r.log | tr '\n' ' ')"
done; done
timeout 120 python3 check_reference.py /tmp/w1b --ops-dir $P/ops_vpk --json $O/check_1b_vpk.json > $O/check_1b_vpk.log 2>&1; echo "check vpk rc $?"; grep -E '"same_tokens"|"ok_|mean_err' $O/check_1b_vpk.json | tr '\n' ' '
