#!/usr/bin/env bash
set -u
o=${OUT:?}
strip .gpu/s9d/bg_* 2>/dev/null
timeout 120 .gpu/s9d/bg_lat --chain 16 --json "$o/bg_lat.json" > "$o/bg_lat.log" 2>&1
echo "rc=$? $(grep -E "dag +10000 gpuos" "$o/bg_lat.log")"
grep "^WL" "$o/bg_lat.log" | tail -8
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
