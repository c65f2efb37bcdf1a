"""Offline: the LM head's claiming path from stamps2.py's file (the kernel of whl_diag2): per block, the
dispatcher's call (item slot 2) -> run_claiming_item past its barrier (slot 127: 2) -> before the
operator's claim adapter (3) -> the adapter's entry (0) -> its first batch's call (1) -> that batch's
return (4). Medians and p10/p90 in us."""
import sys
import numpy as np
S = np.load(sys.argv[1]).astype(np.int64)
nodes = int(S[:, :126, 7].max()) + 1
rows = []
for b in range(S.shape[0]):
    js = [j for j in range(126) if S[b, j, 0] != 0 and S[b, j, 7] == nodes - 1]
    if not js or S[b, 127, 0] == 0:
        continue
    call = S[b, js[0], 2]
    a = S[b, 127]
    rows.append(((a[2] - call), (a[3] - a[2]), (a[0] - a[3]), (a[1] - a[0]), (a[4] - a[1]), (a[1] - call)))
r = np.array(rows, dtype=float) / 1e3
names = ["call -> rci barrier", "rci barrier -> before adapter", "before adapter -> adapter entry",
         "adapter entry -> first batch", "first batch", "call -> first batch"]
print("blocks", len(r))
for i, n in enumerate(names):
    print(f"{n:34s} p10 {np.percentile(r[:, i], 10):7.2f} p50 {np.percentile(r[:, i], 50):7.2f} p90 {np.percentile(r[:, i], 90):7.2f}")
