#!/usr/bin/env bash
# Session 21, call 2 (H200, main's kernel: whl_base): the landed operators (v/m) with the L2 prefetch
# sizes as landed (12 MiB of gate/up, 4 of the next qkv) and larger (gate/up 20 MiB; qkv 8 MiB), and
# attention folded into qkv (v/fold: LLAMA_FOLD=4, the engine's default; LLAMA_FOLD=0: the same
# operators with the attention node), three rounds alternating; the Llama tests on v/fold; traces at
# max_pos 192 (bench_decode's cache) of m and fold, m's with the raw records (the LM head's calls).
set -u
o=${OUT:?}
L=/tmp/logs2; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s21
python3 -m pip install -q --no-deps --target /tmp/site_base $R/.gpu/s19/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
VS="m:m:LLAMA_GU_PF=12582912 gu20:m:LLAMA_GU_PF=20971520 q8:m:LLAMA_QKV_PF=8388608 fold:fold:LLAMA_FOLD=4 fold0:fold:LLAMA_FOLD=0"
run() {  # name dir env
  (cd $P/v/$2 && env $3 timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in $VS; do IFS=: read name dir env <<< "$v"; run ${name}_$k $dir $env; done; done
python3 - "$L" <<'PY' 2>&1 | tee -a $L/summary.txt
import json, statistics, sys
for v in ["m", "gu20", "q8", "fold", "fold0"]:
    try:
        print(v, round(statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abc"), 4))
    except Exception as e:
        print(v, "missing", e)
PY
(cd $P/v/fold && timeout 150 python3 -m pytest -q -x tests > $L/pytest_llama_fold.log 2>&1; echo "llama tests (fold) rc $? $(tail -1 $L/pytest_llama_fold.log) ($SECONDS s)" | tee -a $L/summary.txt); pack
(cd $P/v/m && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' --raw $L/raw_m_40.npy > $L/trace_m_40.txt 2>&1; echo "trace m rc $? ($SECONDS s)" | tee -a $L/summary.txt; head -12 $L/trace_m_40.txt | tail -8 | tee -a $L/summary.txt)
python3 $P/lm_an.py $L/raw_m_40.npy 2>&1 | tee -a $L/summary.txt; pack
(cd $P/v/fold && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_fold_40.txt 2>&1; echo "trace fold rc $? ($SECONDS s)" | tee -a $L/summary.txt; head -12 $L/trace_fold_40.txt | tail -8 | tee -a $L/summary.txt)
(cd $P/v/fold && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 140 --engine '{"max_pos": 192}' > $L/trace_fold_140.txt 2>&1; echo "trace fold 140 rc $? ($SECONDS s)" | tee -a $L/summary.txt; head -12 $L/trace_fold_140.txt | tail -8 | tee -a $L/summary.txt)
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
