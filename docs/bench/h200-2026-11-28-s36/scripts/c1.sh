#!/usr/bin/env bash
# Session 21, call 1 (first call on an H200): main's kernel and operators (whl_base = HEAD's package):
# bench_decode with its torch baselines, a trace at pos 40, the LM head's claiming path stamped (whl_diag2,
# .gpu/s20/sc/c8.sh), then the C++ GPU suites (not the soak) and the Python + Llama suites.
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s21
mkdir -p build && tar xJf $P/bin.tar.xz -C build
python3 -m pip install -q --no-deps --target /tmp/site_base $R/.gpu/s19/whl_base/*.whl > $L/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_diag2 $R/.gpu/s20/whl_diag2/*.whl >> $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee $L/summary.txt
nvidia-smi > $L/gpu.txt
export PYTHONPATH=/tmp/site_base
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
cd examples/llama
timeout 150 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench.log 2>&1; echo "bench rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" $L/bench.log | cut -c1-220 | tee -a $L/summary.txt; pack
for k in a b; do timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_m_$k.json > $L/dec_m_$k.log 2>&1; echo "== m_$k rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_m_$k.log)" | tee -a $L/summary.txt; done
timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 > $L/trace_40.txt 2>&1; echo "trace rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
(cd $R/.gpu/s20/v/m && PYTHONPATH=/tmp/site_diag2 timeout 60 python3 $R/.gpu/s20/stamps2.py /tmp/w1b $L/stamps2_40.npy 40 > $L/stamps2_40.log 2>&1; echo "stamps rc $? ($SECONDS s) $(tail -1 $L/stamps2_40.log)" | tee -a $L/summary.txt
 python3 $R/.gpu/s20/stamps2_an.py $L/stamps2_40.npy 2>&1 | tee -a $L/summary.txt
 python3 $R/.gpu/s20/stamps_an.py $L/stamps2_40.npy > $L/stamps_40.txt 2>&1); pack
cd $R
STEP_TIMEOUT=200 WHEEL=$(ls $R/.gpu/s19/whl_base/*.whl) timeout 330 bash scripts/gpu_run.sh /tmp/gr build tests python > $L/gpu_run.log 2>&1; echo "suites rc $? ($SECONDS s)" | tee -a $L/summary.txt
cp /tmp/gr/summary.txt $L/suites_summary.txt 2>/dev/null; cp /tmp/gr/logs.tar.gz $L/suites_logs.tar.gz 2>/dev/null
grep -cE " pass " $L/suites_summary.txt | sed 's/^/suite steps passed: /' | tee -a $L/summary.txt; grep -vE " pass |test cases" $L/suites_summary.txt | tee -a $L/summary.txt
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
