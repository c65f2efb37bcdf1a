#!/usr/bin/env bash
# Session 9, call 2: warp roles with the block paths' built-ins back to main's code (wm), stamped warp
# roles (wst: per-warp cycle sums, printf), main; bench_graph alternating.
set -u
o=${OUT:?}
cd .gpu && tar xJf s9b.tar.xz && cd ..
P=.gpu/s9
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$o/gpu.txt"
GPUOS_GRAPH_WARPS=1 timeout 240 $P/wm/tests/gpuos_gpu_graphs > "$o/graphs_w1.log" 2>&1; echo "graphs rc=$? $(tail -2 "$o/graphs_w1.log" | head -1)"
for i in 1 2; do for v in main wm wm0; do
  b=$P/wm; w=1
  case $v in main) b=$P/main;; wm0) w=0;; esac
  GPUOS_GRAPH_WARPS=$w timeout 120 $b/bench/bench_graph --json "$o/bg_${v}_$i.json" > "$o/bg_${v}_$i.log" 2>&1
  echo "== $v $i rc=$?: $(grep -E "dag +10000 gpuos|dag +10000 CUDA|fan +130 gpuos|chain +256 gpuos graph  " "$o/bg_${v}_$i.log" | awk '{print $1,$2,$3,$4,$5,$6}' | tr '\n' ' ')"
done; done
timeout 120 $P/wst/bench/bench_graph --chain 16 --json "$o/bg_wst.json" > "$o/bg_wst.log" 2>&1
echo "wst rc=$? $(grep -E "dag +10000 gpuos" "$o/bg_wst.log")"
grep "^WS" "$o/bg_wst.log" | tail -16
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
