#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site $P/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
cp $P/llama/mv_chain.py examples/llama/
for i in 1 2; do
(cd examples/llama && timeout 100 python3 mv_chain.py 16 --nostats 2>&1 | grep -v Warn | sed 's/^/main: /' | tee -a "$o/mv_chain.txt")
(cd $P/llama && timeout 100 python3 mv_chain.py 16 --nostats 2>&1 | grep -v Warn | sed 's/^/new:  /' | tee -a "$o/mv_chain.txt")
done
timeout 60 $P/chain/chain 16 6 65792 nostats | grep -E "median" | sed 's/^/chain main: /' | tee "$o/chain.txt"
timeout 60 $P/chain/chain_p 16 6 65792 nostats | grep -E "median" | sed 's/^/chain new: /' | tee -a "$o/chain.txt"
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
(cd examples/llama && timeout 90 python3 trace_step.py /tmp/w1b 1 > "$o/trace_main.txt" 2>&1); sed -n 3,12p "$o/trace_main.txt"
(cd $P/llama && timeout 90 python3 trace_step.py /tmp/w1b 1 --fuse-limit 0 > "$o/trace_new.txt" 2>&1); sed -n 1,12p "$o/trace_new.txt"
echo "end $SECONDS s"
