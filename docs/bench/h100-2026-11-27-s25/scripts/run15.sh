#!/usr/bin/env bash
# mv16 loaded, generations linked with the scheduler as relocatable SASS (default) or as LTO-IR.
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site_main $P/*.whl > "$o/pip.log" 2>&1
cp $P/llama/mv_chain.py examples/llama/
cd examples/llama
for lto in 0 1 0 1; do
  GPUOS_KERNEL_LTO=$lto PYTHONPATH=/tmp/site_main timeout 200 python3 mv_chain.py 16 --nostats 2>&1 | grep -v Warn | sed "s/^/lto=$lto ($SECONDS s): /" | tee -a "$o/mv_chain.txt"
done
echo "end $SECONDS s"
