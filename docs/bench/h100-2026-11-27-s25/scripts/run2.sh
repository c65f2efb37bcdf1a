#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site $P/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
cd $P/llama
timeout 200 python3 diag.py 2>&1 | tee "$o/diag.txt" | grep -v Warning
echo "== unplaced"
GPUOS_GRAPH_PLACED=0 timeout 200 python3 diag.py 2>&1 | tee "$o/diag_unplaced.txt" | grep -v Warning
echo "end $SECONDS s"
