#!/usr/bin/env bash
# Session 31, call 8 (H200): RoleShared's ring slots read through accessors (item_of, payload_of,
# waits_of; a): bench_decode --skip-torch batch 1 against main's library (m), three alternating rounds,
# the same example; then every GPU suite but the soak and the Python and Llama pytest suites on a's build.
set -u
o=${OUT:?}
L=/tmp/logs8; rm -rf $L; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s46
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
for v in m a; do rm -rf /tmp/site_$v; python3 -m pip install -q --no-deps --target /tmp/site_$v $P/whl_$v/*.whl > $L/pip_$v.log 2>&1; done
cd $P/ex_m && PYTHONPATH=/tmp/site_m python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt; pack
run() {  # variant round
  (cd $P/ex_m && PYTHONPATH=/tmp/site_$1 timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, [^,]*, [^}]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in m a; do run $v $k; done; done
cd $R
rm -rf /tmp/b8 /tmp/gr8 && mkdir -p /tmp/b8 && tar xzf $P/bin_a.tgz -C /tmp/b8 --strip-components=1
WHEEL=$(ls $P/whl_a/*.whl) STEP_TIMEOUT=120 bash scripts/gpu_run.sh /tmp/gr8 /tmp/b8 tests python > $L/gpu_run.log 2>&1; echo "gpu_run rc $? ($SECONDS s)" | tee -a $L/summary.txt
cat /tmp/gr8/summary.txt >> $L/summary.txt
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
