#!/usr/bin/env bash
# Session 22, call 5 (H200): the hand-over probe (a 4 KiB vector between two SMs: counter and fences
# against values tagged with their round) and the fence probe with bulk L2 prefetches in flight.
set -u
o=${OUT:?}
P=$PWD/.gpu/s22/probe
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/summary.txt
timeout 60 $P/handover_probe 2>&1 | tee -a $o/summary.txt
timeout 90 $P/fence_probe 2>&1 | tee -a $o/summary.txt
