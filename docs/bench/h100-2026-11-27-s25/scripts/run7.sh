#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site $P/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
cp $P/llama/mv_chain.py examples/llama/
(cd examples/llama && timeout 100 python3 mv_chain.py 16 2>&1 | grep -v Warn | tee "$o/mv_chain.txt")
(cd examples/llama && GPUOS_GRAPH_PLACED=0 timeout 100 python3 mv_chain.py 16 2>&1 | grep -v Warn | tee "$o/mv_chain_unplaced.txt")
timeout 60 $P/chain/chain 16 6 | grep -E "mode (0|3)" | tee "$o/chain.txt"
echo "end $SECONDS s"
