#!/usr/bin/env bash
# Session 13, call 7: main at the session's end: the Llama tests (the tiny reference test with the gains in
# the weights and in the operators) and the Python package's suite.
set -u
O=${OUT:?}; o=/tmp/c7; mkdir -p $o
P=$PWD/.gpu/s13
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$o/gpu.txt"
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
(cd examples/llama && timeout 240 python3 -m pytest -q -rs tests > "$o/pytest_llama.log" 2>&1; echo "llama tests rc $? $(tail -1 "$o/pytest_llama.log") ($SECONDS s)")
(cd python/tests && timeout 240 python3 -m pytest -q -rs . > "$o/pytest_python.log" 2>&1; echo "python tests rc $? $(tail -1 "$o/pytest_python.log") ($SECONDS s)")
grep -E "^FAILED|^SKIPPED|Error" "$o"/pytest_*.log | head -8
tar czf $O/c7.tgz -C /tmp c7
echo "end $SECONDS s"
