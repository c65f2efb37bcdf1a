#!/usr/bin/env bash
# Session 20, call 3 (main's kernel, s19/whl_base): is the attention tile's time its code's? v/att2 runs
# each one-chunk attention tile twice, the second time with warm code (L1 invalidated between: its data
# from L2 as the first's); diagnostic traces (trace_diag.py) of att2 and of the landed m at pos 40.
set -u
o=${OUT:?}
L=/tmp/logs3; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s20
python3 -m pip install -q --no-deps --target /tmp/site_base $R/.gpu/s19/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
for v in att2 m; do
  cp $P/trace_diag.py $P/v/$v/
  (cd $P/v/$v && timeout 50 python3 trace_diag.py /tmp/w1b 1 --pos 40 --raw $L/raw_$v.npy > $L/trace_$v.txt 2>&1; echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt)
  python3 $P/attdiag.py $L/raw_$v.npy 2>&1 | tee -a $L/summary.txt; grep -E "^attn" $L/trace_$v.txt | tee -a $L/summary.txt; pack
done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
