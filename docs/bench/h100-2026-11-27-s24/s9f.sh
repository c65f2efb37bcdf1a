#!/usr/bin/env bash
set -u
o=${OUT:?}
strip .gpu/s9f/bg_* 2>/dev/null
for i in 1 2; do for v in spin ns20 ns100; do
timeout 120 .gpu/s9f/bg_$v --chain 16 --json "$o/bg_${v}_$i.json" > "$o/bg_${v}_$i.log" 2>&1
echo "$v rc=$? $(grep -E "dag +10000 gpuos|fan +130 gpuos" "$o/bg_${v}_$i.log" | awk '{print $1,$5}' | tr '\n' ' ')"
done; done
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
