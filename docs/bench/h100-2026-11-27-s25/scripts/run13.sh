#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site_tr $P/whl_tr/*.whl > "$o/pip.log" 2>&1
cp $P/llama/mv_chain.py $P/llama/mv_roles.py examples/llama/
cd examples/llama
PYTHONPATH=/tmp/site_tr timeout 100 python3 mv_roles.py 2>&1 | grep -v Warn | tee "$o/mv_roles.txt"; cp /tmp/roles.npy "$o/"; cp $P/llama/ops/llama.cuh ops/llama.cuh; PYTHONPATH=/tmp/site_tr timeout 100 python3 mv_roles.py 2>&1 | grep -v Warn | sed "s/^/newloop: /" | tee -a "$o/mv_roles.txt"; git checkout ops/llama.cuh
echo "end $SECONDS s"
