#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
for v in main ig; do [ -d /tmp/site_$v ] || python3 -m pip install -q --no-deps --target /tmp/site_$v $P/$v/*.whl >> "$o/pip.log" 2>&1; done
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
cd examples/llama
for v in main ig; do
  PYTHONPATH=/tmp/site_$v timeout 90 python3 trace_step.py /tmp/w1b 1 > "$o/trace_$v.txt" 2>&1; sed -n 1,12p "$o/trace_$v.txt"
  PYTHONPATH=/tmp/site_$v timeout 90 python3 trace_step.py /tmp/w1b 8 > "$o/trace8_$v.txt" 2>&1; sed -n 1,12p "$o/trace8_$v.txt"
done
echo "end $SECONDS s"
