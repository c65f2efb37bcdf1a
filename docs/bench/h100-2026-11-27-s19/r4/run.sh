#!/usr/bin/env bash
# Call 4: the run_role fixes at full speed (graphs suite, Llama GPU tests), then racecheck on the graphs
# suite's awaiting case and its other cases but the random DAGs, on 2 SMs, with durations.
set -u
R=$OUT/c4; mkdir -p $R
cd .gpu && tar xJf pkg_c4.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
timeout 60 .gpu/g/tests/gpuos_gpu_graphs -d > $R/t_graphs.log 2>&1; echo "rc=$?" >> $R/t_graphs.log
python3 -m pip install -q --no-deps --target /tmp/site $(ls $PWD/.gpu/whl_c4/*.whl) > $R/pip.log 2>&1
export PYTHONPATH=/tmp/site
(cd examples/llama/tests && timeout 120 python3 -m pytest -q -rs -p no:cacheprovider . > $R/pytest_llama.log 2>&1; echo "rc=$?" >> $R/pytest_llama.log)
echo "full-speed $SECONDS" >> $R/times.txt
cd $OUT && tar czf c4_a.tgz c4 && cd - > /dev/null
SANITIZE_TOOLS=racecheck SANITIZE_SMS=2 SANITIZE_SUITES="graphs" SANITIZE_ARGS="-d -tc=*awaits*" STEP_TIMEOUT=60 bash scripts/gpu_run.sh $R/ra .gpu/li sanitize > /dev/null 2>&1
echo "ra $SECONDS" >> $R/times.txt
cd $OUT && rm -f c4_a.tgz && tar czf c4_b.tgz c4 && cd - > /dev/null
T=$((315 - SECONDS)); [ $T -gt 30 ] && SANITIZE_TOOLS=racecheck SANITIZE_SMS=2 SANITIZE_SUITES="graphs" SANITIZE_ARGS="-d -tce=*random*,*awaits*" STEP_TIMEOUT=$T bash scripts/gpu_run.sh $R/rb .gpu/li sanitize > /dev/null 2>&1
echo "end $SECONDS s" >> $R/times.txt
cd $OUT && rm -f c4_b.tgz && tar czf c4.tgz c4 && rm -rf c4
