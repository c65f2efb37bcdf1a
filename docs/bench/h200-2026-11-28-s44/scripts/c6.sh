#!/usr/bin/env bash
# Session 29, call 6 (H200): the local-memory probe again, with each timed load's value stored to shared
# memory before the clock is read (the first version read the clock before its loads returned).
set -u
o=${OUT:?}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/l1_local2.txt
.gpu/s44/l1_local_probe2 2>&1 | tee -a $o/l1_local2.txt
