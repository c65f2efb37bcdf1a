#!/usr/bin/env bash
# Session 22, call 2 (H200): why gpuos_gpu_ops and gpuos_gpu_errors failed with c1's spin binaries:
# both suites with main's (s21 bin), rel's and spin's binaries, logs kept; then rel2 (fence.release in
# run_role's tail only, the placed wait polling without __nanosleep) against main's kernel, three rounds,
# and every GPU suite (no soak), the Python and Llama suites with rel2.
set -u
o=${OUT:?}
L=/tmp/logs2; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s22
H=$R/.gpu/s21/v/h
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
for v in m rel spin; do
  mkdir -p /tmp/b_$v
  if [ $v = m ]; then tar xJf $R/.gpu/s21/bin.tar.xz -C /tmp/b_$v; else tar xJf $P/bin_$v.tar.xz -C /tmp/b_$v; fi
  for t in ops errors; do
    timeout 90 /tmp/b_$v/tests/gpuos_gpu_$t > $L/suite_${v}_$t.log 2>&1
    echo "$v $t rc $? ($SECONDS s): $(grep -E 'test cases' $L/suite_${v}_$t.log)" | tee -a $L/summary.txt
  done
  pack
done
python3 -m pip install -q --no-deps --target /tmp/site_m $R/.gpu/s19/whl_base/*.whl > $L/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_rel2 $P/whl_rel2/*.whl >> $L/pip.log 2>&1
PYTHONPATH=/tmp/site_m python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name round
  (cd $H && PYTHONPATH=/tmp/site_$1 timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do run m $k; run rel2 $k; done
mkdir -p build && tar xJf $P/bin_rel2.tar.xz -C build
left=$((580 - SECONDS))
STEP_TIMEOUT=200 WHEEL=$(ls $P/whl_rel2/*.whl) timeout $left bash scripts/gpu_run.sh /tmp/gr build tests python > $L/gpu_run.log 2>&1; echo "suites rc $? ($SECONDS s)" | tee -a $L/summary.txt
cp /tmp/gr/summary.txt $L/suites_summary.txt 2>/dev/null; cp -r /tmp/gr/logs $L/suite_logs 2>/dev/null
grep -vE " pass |test cases" $L/suites_summary.txt | tee -a $L/summary.txt
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
