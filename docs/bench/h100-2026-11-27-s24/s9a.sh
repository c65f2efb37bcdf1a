#!/usr/bin/env bash
# Session 9, call 1: warp roles (wm) against main: graphs/ops suites on wm (warps on and off), bench_graph
# alternating main / wm / wm with GPUOS_GRAPH_WARPS=0.
set -u
o=${OUT:?}
cd .gpu && tar xJf s9a.tar.xz && cd ..
P=.gpu/s9
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$o/gpu.txt"
for w in 1 0; do
  GPUOS_GRAPH_WARPS=$w timeout 240 $P/wm/tests/gpuos_gpu_graphs > "$o/graphs_w$w.log" 2>&1; echo "graphs warps=$w rc=$? $(tail -2 "$o/graphs_w$w.log" | head -1)"
done
timeout 120 $P/wm/tests/gpuos_gpu_ops > "$o/ops.log" 2>&1; echo "ops rc=$? $(tail -2 "$o/ops.log" | head -1)"
for i in 1 2; do for v in main wm wm0; do
  b=$P/wm; w=1
  case $v in main) b=$P/main;; wm0) w=0;; esac
  GPUOS_GRAPH_WARPS=$w timeout 120 $b/bench/bench_graph --json "$o/bg_${v}_$i.json" > "$o/bg_${v}_$i.log" 2>&1
  echo "== $v $i rc=$?: $(grep -E "dag +10000 gpuos|dag +10000 CUDA|fan +130 gpuos|chain +256 gpuos graph" "$o/bg_${v}_$i.log" | awk '{print $1,$2,$3,$4,$5,$6}' | tr '\n' ' ')"
done; done
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
