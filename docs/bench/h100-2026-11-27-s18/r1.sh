#!/usr/bin/env bash
# Call 1: the staged-projection experiment (branch smem-stage). A main image + main ops; B 36 KiB image +
# main ops; C 36 KiB image + staged ops (.gpu/llama_stage/ops); D 36 KiB image + awaiting ops, nothing
# staged; F main image + main ops with attention asking for a chunk's values with its keys. Llama GPU
# tests on C first, D and F checked against transformers on the tiny model.
set -u
R=$OUT/r1; mkdir -p $R
cd .gpu && tar xJf pkg.tar.xz && cd ..
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_main $(ls $PWD/.gpu/whl_main/*.whl) > $R/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_stage $(ls $PWD/.gpu/whl_stage/*.whl) >> $R/pip.log 2>&1
(cd .gpu/llama_stage/tests && PYTHONPATH=/tmp/site_stage timeout 150 python3 -m pytest -q -rs -p no:cacheprovider . > $R/pytest_llama_stage.log 2>&1; echo "rc=$?" >> $R/pytest_llama_stage.log)
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $R/weights.log 2>&1
cp -r .gpu/ops_main /tmp/ops_F && patch -s /tmp/ops_F/llama_attn.cu < docs/bench/h100-2026-11-27-s17/attn_values_early.diff
cp -r .gpu/llama_stage/ops /tmp/ops_D && sed -i 's/constexpr unsigned kLlamaStageK = 768;/constexpr unsigned kLlamaStageK = 0;/' /tmp/ops_D/llama.cuh
python3 examples/llama/make_weights.py /tmp/wtiny --preset tiny >> $R/weights.log 2>&1
for v in D F; do
  (cd examples/llama && PYTHONPATH=$([ $v = F ] && echo /tmp/site_main || echo /tmp/site_stage) timeout 60 \
     python3 check_reference.py /tmp/wtiny --ops-dir /tmp/ops_$v --json $R/check_$v.json > $R/check_$v.log 2>&1; echo "rc=$?" >> $R/check_$v.log)
done
cd examples/llama
for i in 1 2; do for v in A B C D F; do
  case $v in
    A) site=/tmp/site_main; ops=../../.gpu/ops_main ;;
    B) site=/tmp/site_stage; ops=../../.gpu/ops_main ;;
    C) site=/tmp/site_stage; ops=../../.gpu/llama_stage/ops ;;
    D) site=/tmp/site_stage; ops=/tmp/ops_D ;;
    F) site=/tmp/site_main; ops=/tmp/ops_F ;;
  esac
  s=$(date +%s)
  PYTHONPATH=$site timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 256 --ops-dir $ops --json $R/dec_${v}_$i.json > $R/dec_${v}_$i.log 2>&1
  echo "$v $i rc=$? $(( $(date +%s) - s )) s" >> $R/times.txt
done; done
PYTHONPATH=/tmp/site_stage timeout 60 python3 trace_step.py /tmp/w1b 1 --steps 5 --ops ../../.gpu/llama_stage/ops --raw $R/raw_C.npy --json $R/trace_C.json > $R/trace_C.txt 2>&1
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
