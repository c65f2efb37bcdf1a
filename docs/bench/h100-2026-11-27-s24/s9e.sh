#!/usr/bin/env bash
set -u
o=${OUT:?}
strip .gpu/s9e/bg_* 2>/dev/null
for v in fence nofence; do
timeout 120 .gpu/s9e/bg_$v --chain 16 --json "$o/bg_$v.json" > "$o/bg_$v.log" 2>&1
echo "$v rc=$? $(grep -E "dag +10000 gpuos" "$o/bg_$v.log")"
grep "^WL" "$o/bg_$v.log" | tail -3
done
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
