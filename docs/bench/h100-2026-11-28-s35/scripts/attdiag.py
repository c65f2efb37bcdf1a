"""Offline: attention tiles of a trace_diag --raw file: for tiles that ran the body twice (att2), the
first run (delta: record start - call entry) and the second (end - start); else the tile time."""
import sys
import numpy as np
R = np.load(sys.argv[1]).astype(np.int64)
kind = R[:, 1] >> 56
a = R[kind == 2]
dur = (a[:, 3] - a[:, 2]) / 1e3
delta = a[:, 4] / 1e3
tile = a[:, 1] & 0xFFFF
work = tile % int(sys.argv[2] if len(sys.argv) > 2 else 16) == 0
print("attention calls", len(a), "split 0", int(work.sum()))
for name, v in (("first run / entry->start", delta[work]), ("tile time (second run if twice)", dur[work])):
    print(f"{name}: p10 {np.percentile(v, 10):.2f} p50 {np.percentile(v, 50):.2f} p90 {np.percentile(v, 90):.2f} max {v.max():.2f}")
