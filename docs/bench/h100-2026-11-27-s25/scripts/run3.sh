#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site $P/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
cp $P/llama/diag.py examples/llama/diag_main.py
(cd examples/llama && timeout 200 python3 diag_main.py main 2>&1 | tee "$o/diag_main.txt" | grep -v -E "Warning|shards")
echo "== fa"
(cd $P/llama && timeout 200 python3 diag.py 2>&1 | tee "$o/diag_fa.txt" | grep -v -E "Warning|shards")
echo "end $SECONDS s"
