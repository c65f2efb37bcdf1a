#!/usr/bin/env bash
set -u
o=${OUT:?}
strip .gpu/s9g/bg 2>/dev/null
for i in 1 2; do for b in 1 2 4 8 16; do
GPUOS_WARP_BLOCKS=$b timeout 120 .gpu/s9g/bg --chain 16 --json "$o/bg_${b}_$i.json" > "$o/bg_${b}_$i.log" 2>&1
echo "B=$b rc=$? $(grep -E "dag +10000 gpuos|fan +130 gpuos" "$o/bg_${b}_$i.log" | awk '{print $1,$5}' | tr '\n' ' ')"
done; done
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
