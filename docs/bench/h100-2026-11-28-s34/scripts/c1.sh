#!/usr/bin/env bash
# Session 19, call 1 (main's kernel, whl_base), prepared at the end of session 18: the o projection's
# tiles ask L2 (cp.async.bulk.prefetch.L2, one thread, 64 KiB a request, before their await) for their
# share of the top LLAMA_PF_BYTES of the layer's gate/up weights, the tiles gate/up's claims take first
# (claims count down from the last tile), while attention leaves the memory idle (v/pfo; 0: the argument
# change alone). The eighteenth session's attention-side prefetch (pf16) cost attention ~3 us a layer and
# gained gate/up ~2. Against main's operators (v/n), three rounds alternating; then traces (main's with
# --json, for the LM head's starts block by block: its median block starts ~11 us after the last down
# projection ends, its first ~2.4 us; analyse with ../lm_starts.py) and of the fastest prefetch. ~520 s.
# v/kvpf: each qkv tile of a key or value head's first part asks L2 for the row's earlier keys or values
# of that head (128 B a position) in its epilogue, so that attention's loads of them hit L2.
# v/q4: qkv in tiles of 4 rows (project<4>: lanes g < 4 hold rows g of the even 32-wide k blocks, lanes
# g >= 4 rows g - 4 of the odd ones, two sums; tile_order for 4 rows), 768 tiles over the 263 blocks
# (at most 12 rows a block against 16 on 192 blocks): its Llama tests, 1B check and trace run after.
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s19
python3 -m pip install -q --no-deps --target /tmp/site_base $P/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir pf_bytes
  (cd $P/v/$2 && LLAMA_PF_BYTES=$3 timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
M=$((1024 * 1024))
VS="n:n:0 q4:q4:0 kvpf:kvpf:0 pfo0:pfo:0 pfo16:pfo:$((16 * M)) pfo32:pfo:$((32 * M)) pfo48:pfo:$((48 * M))"
for k in a b c; do for v in $VS; do IFS=: read name dir pf <<< "$v"; run ${name}_$k $dir $pf; done; done
pick=$(python3 - "$L" <<'PY'
import json, statistics, sys
def m(v):
    try:
        return statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abc")
    except Exception:
        return 9.0
vs = ["n", "q4", "kvpf", "pfo0", "pfo16", "pfo32", "pfo48"]
for v in vs:
    print(v, round(m(v), 4), file=sys.stderr)
print(min(vs[4:], key=m))
PY
)
echo "fastest prefetch: $pick" | tee -a $L/summary.txt
pf=$(echo "$VS" | tr ' ' '\n' | grep "^$pick:" | cut -d: -f3)
(cd $P/v/n && timeout 60 python3 trace_step.py /tmp/w1b 1 --pos 40 --json $L/trace_n.json --raw $L/trace_n_raw.npy > $L/trace_n.txt 2>&1; echo "trace n rc $? ($SECONDS s)" | tee -a $L/summary.txt); pack
(cd $P/v/pfo && LLAMA_PF_BYTES=$pf timeout 60 python3 trace_step.py /tmp/w1b 1 --pos 40 > $L/trace_$pick.txt 2>&1; echo "trace $pick rc $? ($SECONDS s)" | tee -a $L/summary.txt); pack
(cd $P/v/q4 && timeout 120 python3 -m pytest -q -x tests > $L/pytest_q4.log 2>&1; echo "llama tests (q4) rc $? $(tail -1 $L/pytest_q4.log) ($SECONDS s)" | tee -a $L/summary.txt); pack
(cd $P/v/q4 && timeout 100 python3 check_reference.py /tmp/w1b --json $L/check_1b_q4.json > $L/check_1b_q4.log 2>&1; echo "check 1b (q4) rc $? ($SECONDS s)" | tee -a $L/summary.txt); pack
(cd $P/v/q4 && timeout 60 python3 trace_step.py /tmp/w1b 1 --pos 40 > $L/trace_q4.txt 2>&1; echo "trace q4 rc $? ($SECONDS s)" | tee -a $L/summary.txt); pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
