"""Offline: each block's first LM-head call against the last down projection's end, from a trace_step
--raw file ([n][4] uint64: key, kind<<56 | sm<<40 | block<<24 | tiles<<16 | tile, start, end).
Usage: python lm_starts.py trace_raw.npy"""
import sys
import numpy as np
OP_NAMES = ("llama_embed", "llama_qkv", "llama_attn", "llama_resid", "llama_swiglu", "llama_logits")
recs = np.load(sys.argv[1])
base = int(recs[:, 2].min())
nodes = []
for k in np.unique(recs[:, 0]):
    r = recs[recs[:, 0] == k]
    nodes.append((OP_NAMES[int(r[0, 1] >> 56)], int(r[:, 3].max()) - base, r))
nodes.sort(key=lambda n: n[1])
down_end = [n for n in nodes if n[0] == "llama_resid"][-1][1]
lm = [n for n in nodes if n[0] == "llama_logits"][0][2]
blocks = (lm[:, 1] >> 24) & 0xFFFF
sms = (lm[:, 1] >> 40) & 0xFFFF
firsts = {int(b): (int(lm[blocks == b, 2].min()) - base - down_end) / 1e3 for b in np.unique(blocks)}
f = np.array(sorted(firsts.values()))
print("blocks", len(f), "first start after down's end (us): min %.1f p10 %.1f p50 %.1f p90 %.1f max %.1f"
      % (f.min(), *np.percentile(f, [10, 50, 90]), f.max()))
print("histogram (1 us bins from 0):", np.histogram(f, bins=np.arange(0.0, f.max() + 1.0, 1.0))[0].tolist())
for b in sorted(firsts, key=firsts.get)[:: max(1, len(firsts) // 16)]:
    r = lm[blocks == b]
    i = int(np.argmin(r[:, 2]))
    print(f"block {b:3d} sm {int(sms[blocks == b][0]):3d} first {firsts[b]:6.1f} us, calls {len(r):3d}, "
          f"first call: {int((r[i, 1] >> 16) & 0xFF)} tiles from tile {int(r[i, 1] & 0xFFFF)}, "
          f"{(int(r[i, 3]) - int(r[i, 2])) / 1e3:.1f} us")
