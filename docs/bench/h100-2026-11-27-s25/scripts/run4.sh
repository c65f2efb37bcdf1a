#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site $P/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
[ -f /tmp/tiny/config.json ] || (cd $P/llama && python3 -c "from make_weights import make; make('/tmp/tiny','tiny',seed=0)" > /dev/null 2>&1)
cp $P/llama/race.py examples/llama/race_main.py
(cd examples/llama && timeout 150 python3 race_main.py 2>&1 | tee "$o/race_main.txt" | grep -v -E "Warning|shards")
echo "== unplaced"
(cd examples/llama && GPUOS_GRAPH_PLACED=0 timeout 150 python3 race_main.py 2>&1 | tee "$o/race_main_unplaced.txt" | grep -v -E "Warning|shards")
echo "end $SECONDS s"
