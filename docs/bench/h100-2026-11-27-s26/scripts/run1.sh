#!/usr/bin/env bash
# Session 11, call 1: loaded operators inlined into the dispatch loops (ig) against main.
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$o/gpu.txt"; nproc
for v in main ig; do python3 -m pip install -q --no-deps --target /tmp/site_$v $P/$v/*.whl >> "$o/pip.log" 2>&1; done
cp $P/mv_chain.py examples/llama/
for v in main ig; do PYTHONPATH=/tmp/site_$v timeout 200 python3 $P/genload.py examples/llama/ops 2>&1 | grep -v Warn | sed "s/^/$v: /" | tee -a "$o/genload.txt"; done
echo "genload at $SECONDS s"
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
echo "weights at $SECONDS s"
cd examples/llama
for i in 1 2; do for v in main ig; do
  PYTHONPATH=/tmp/site_$v timeout 100 python3 mv_chain.py 16 --nostats 2>&1 | grep -v Warn | sed "s/^/$v: /" | tee -a "$o/mv_chain.txt"
done; done
for i in 1 2; do for v in main ig; do
  PYTHONPATH=/tmp/site_$v timeout 150 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --json "$o/dec_${v}_$i.json" > "$o/dec_${v}_$i.log" 2>&1
  echo "== dec $v $i ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_${v}_$i.log" | tr '\n' ' ')"
done; done
PYTHONPATH=/tmp/site_ig timeout 200 python3 -m pytest -q tests/test_llama_gpu.py > "$o/pytest_llama.log" 2>&1; echo "pytest rc $?" >> "$o/pytest_llama.log"
grep -E "passed|failed|^FAILED|rc " "$o/pytest_llama.log"
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
