#!/usr/bin/env bash
# Session 11, call 8: bench_graph, main against the split kernel with inlining off (ig0) and on (ig1), alternating; the online switch suite.
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
mkdir -p /tmp/b && tar xJf $P/igbin.tar.xz -C /tmp/b && xz -dc $P/mainbin/bench_graph.xz > /tmp/b/bench_graph_main && chmod +x /tmp/b/bench_graph_main
for i in 1 2; do for v in main ig0 ig1; do
  b=/tmp/b/bench/bench_graph; inl=0
  case $v in main) b=/tmp/b/bench_graph_main;; ig1) inl=1;; esac
  GPUOS_INLINE_OPERATORS=$inl timeout 150 $b --json "$o/bg_${v}_$i.json" > "$o/bg_${v}_$i.log" 2>&1
  echo "== $v $i rc=$? ($SECONDS s): $(grep -E "dag +10000 gpuos|chain +256 gpuos graph" "$o/bg_${v}_$i.log" | awk '{print $0}' | sed 's/  */ /g' | tr '\n' ';')"
done; done
mkdir -p /work/ig && cd /work/ig && timeout 300 /tmp/b/tests/gpuos_gpu_online_switch > "$o/gpu_online_switch.log" 2>&1; echo "online_switch rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_online_switch.log")"
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
