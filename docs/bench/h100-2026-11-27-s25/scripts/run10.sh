#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site $P/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
cp $P/llama/mv_chain.py examples/llama/
for i in 1 2; do
(cd examples/llama && timeout 100 python3 mv_chain.py 16 2>&1 | grep -v Warn | sed 's/^/main: /' | tee -a "$o/mv_chain.txt")
(cd $P/llama && timeout 100 python3 mv_chain.py 16 2>&1 | grep -v Warn | sed 's/^/new:  /' | tee -a "$o/mv_chain.txt")
done
timeout 60 $P/chain/chain 16 6 | grep -E "mode 3" | sed 's/^/chain main: /' | tee "$o/chain.txt"
timeout 60 $P/chain/chain_p 16 6 | grep -E "mode 3" | sed 's/^/chain new: /' | tee -a "$o/chain.txt"
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
for i in 1 2; do for v in main new; do
  dir=$P/llama; extra="--fuse-limit 0"
  case $v in main) dir=$PWD/examples/llama; extra="";; esac
  (cd $dir && timeout 120 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 $extra --json "$o/dec_${v}_$i.json" > "$o/dec_${v}_$i.log" 2>&1)
  echo "== dec $v $i ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_${v}_$i.log" | tr '\n' ' ')"
done; done
(cd $P/llama && timeout 200 python3 -m pytest -q tests/test_llama_gpu.py > "$o/pytest_llama.log" 2>&1; echo "pytest rc $?" >> "$o/pytest_llama.log")
grep -E "passed|failed|^FAILED|rc " "$o/pytest_llama.log"
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
