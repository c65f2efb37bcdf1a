#!/usr/bin/env bash
# Session 20, call 5: the dispatcher's own time. The kernel of /tmp/whl_diag (main + GPUOS_ROLE_STAMPS:
# every block stamps its items' stages) runs the landed operators (v/m): stamps at pos 40 (stamps.py),
# and bench_decode with both kernels (the stamps' cost).
set -u
o=${OUT:?}
L=/tmp/logs5; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s20
python3 -m pip install -q --no-deps --target /tmp/site_base $R/.gpu/s19/whl_base/*.whl > $L/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_diag $P/whl_diag/*.whl >> $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
[ -d /tmp/w1b ] || PYTHONPATH=/tmp/site_base python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
cd $P/v/m
for pos in 40 150; do
  PYTHONPATH=/tmp/site_diag timeout 60 python3 $P/stamps.py /tmp/w1b $L/stamps_$pos.npy $pos > $L/stamps_$pos.log 2>&1; echo "stamps $pos rc $? ($SECONDS s) $(tail -1 $L/stamps_$pos.log)" | tee -a $L/summary.txt
  python3 $P/stamps_an.py $L/stamps_$pos.npy > $L/stamps_$pos.txt 2>&1; cat $L/stamps_$pos.txt | tee -a $L/summary.txt; pack
done
for k in a b; do for w in base diag; do
  PYTHONPATH=/tmp/site_$w timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_${w}_$k.json > $L/dec_${w}_$k.log 2>&1
  echo "== $w $k ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}" $L/dec_${w}_$k.log)" | tee -a $L/summary.txt; pack
done; done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
