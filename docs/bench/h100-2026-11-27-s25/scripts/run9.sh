#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site $P/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
cp $P/llama/mv_chain.py examples/llama/
mkdir -p "$o/cache"
(cd examples/llama && GPUOS_CACHE_DIR="$o/cache" timeout 100 python3 mv_chain.py 16 2>&1 | grep -v Warn | tee "$o/mv_chain.txt")
ls -la "$o/cache" "$o/cache"/* | head -30
echo "end $SECONDS s"
