#!/usr/bin/env bash
# For the next session's first device call (built at 1cdefec; pack: .gpu/pkg_next.tar.xz = g, whl_next,
# g_stamps): what the last session wrote but could not run. 1. the errors suite (the SM-budget case with
# GPUOS_SM_BUDGET) and the graphs suite; 2. the Llama GPU tests (tiny-g8 added); 3. bench_torch with the
# batch built once and queued matmul timings; 4. the chain-stamps image's bench_graph chains;
# 5. racecheck on 2 SMs over the suites that did not finish on 8, 40 s each, while time is left.
set -u
R=$OUT/next; mkdir -p $R
cd .gpu && tar xJf pkg_next.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
for t in errors graphs; do timeout 120 .gpu/g/tests/gpuos_gpu_$t > $R/$t.log 2>&1; echo "rc=$?" >> $R/$t.log; done
python3 -m pip install -q --no-deps --target /tmp/site $(ls $PWD/.gpu/whl_next/*.whl) > $R/pip.log 2>&1
export PYTHONPATH=/tmp/site
(cd examples/llama/tests && timeout 200 python3 -m pytest -q -rs -p no:cacheprovider . > $R/pytest_llama.log 2>&1; echo "rc=$?" >> $R/pytest_llama.log)
timeout 150 python3 bench/bench_torch.py --json $R/bench_torch.json > $R/bench_torch.log 2>&1; echo "rc=$?" >> $R/bench_torch.log
timeout 120 .gpu/g_stamps/bench/bench_graph --chain 256,1024 --dag-nodes 1000 --json $R/bench_graph_stamps.json > $R/bench_graph_stamps.log 2>&1
grep -h "chain-stamps" $R/bench_graph_stamps.log | sed 's/block [0-9]* //' | sort | uniq -c > $R/stamps.txt
cd $OUT && tar czf next_a.tgz next && cd - > /dev/null
[ $SECONDS -lt 300 ] && SANITIZE_TOOLS=racecheck SANITIZE_SMS=2 SANITIZE_SUITES="alloc dual_slot_switch ops suspend graphs" \
  STEP_TIMEOUT=40 bash scripts/gpu_run.sh $R/rc .gpu/g sanitize > /dev/null 2>&1
echo "end $SECONDS s" > $R/times.txt
cd $OUT && rm -f next_a.tgz && tar czf next.tgz next && rm -rf next
