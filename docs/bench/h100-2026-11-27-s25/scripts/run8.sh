#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site $P/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
cp $P/llama/mv_chain.py examples/llama/
(cd examples/llama && timeout 100 python3 mv_chain.py 16 2>&1 | grep -v Warn | tee "$o/mv_chain.txt")
timeout 60 $P/chain/chain 16 6 | grep -E "mode|clock" | tee "$o/chain.txt"
echo "== chain, 8 KiB of dynamic shared memory"
timeout 60 $P/chain/chain 16 6 8192 | grep -E "mode (0|2|3)|clock" | tee "$o/chain_8k.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv | tee "$o/clocks.txt"
echo "end $SECONDS s"
