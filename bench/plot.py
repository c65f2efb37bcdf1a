#!/usr/bin/env python3
"""Plots the benchmark results: bench/plot.py [RESULTS_DIR] [--out DIR].

Reads bench_dispatch.json, bench_throughput.json, bench_graph.json, bench_large.json, bench_alloc.json and
bench_llama.json (examples/llama/bench_decode.py) from RESULTS_DIR
(default: the current directory; a missing file is skipped) and writes bench_<name>.png for each to --out
(default: docs/ of the repository). Needs matplotlib.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only: no display on a build or GPU machine
import matplotlib.pyplot as plt  # noqa: E402

GPUOS_COLOR = "#d62728"
BASELINE_COLORS = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#7f7f7f"]


def load(path):
    if not os.path.exists(path):
        print(f"plot: {path} not found, skipped")
        return None
    with open(path) as f:
        return json.load(f)


def subtitle(r):
    return f"{r['device']['name']}, driver {r['driver_version']}, {r['build_info']}"


def finish(fig, title, out):
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    plt.close(fig)


def style(ax, xlabel, ylabel, xlog=None, ylog=False, legend=8):
    """Axis labels, log scales (xlog: the x axis' base), grid and legend."""
    if xlog:
        ax.set_xscale("log", base=xlog)
    if ylog:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend)


def color_of(name, i):
    return GPUOS_COLOR if name.startswith("gpuos") else BASELINE_COLORS[i % len(BASELINE_COLORS)]


def plot_dispatch(r, out):
    methods = r["methods"]
    # The headline methods; the floor's ladder ("pp ..." rows) is in the JSON and the tables.
    names = [n for n in methods if not n.startswith("pp")]
    fig, (bars, cdf) = plt.subplots(1, 2, figsize=(13, 5))

    x = range(len(names))
    w = 0.38
    p50 = [methods[n]["p50"] for n in names]
    p99 = [methods[n]["p99"] for n in names]
    bars.bar([i - w / 2 for i in x], p50, w, label="p50", color=[color_of(n, i) for i, n in enumerate(names)])
    bars.bar([i + w / 2 for i in x], p99, w, label="p99", color=[color_of(n, i) for i, n in enumerate(names)],
             alpha=0.45)
    for i, (a, b) in enumerate(zip(p50, p99)):
        bars.text(i - w / 2, a, f"{a:.1f}", ha="center", va="bottom", fontsize=8)
        bars.text(i + w / 2, b, f"{b:.1f}", ha="center", va="bottom", fontsize=8)
    bars.set_xticks(list(x))
    bars.set_xticklabels(names, rotation=20)
    bars.set_ylabel("round trip, one task in flight (us)")
    bars.set_title("p50 (solid) and p99 (light)")

    for i, n in enumerate(names):
        q = methods[n].get("quantiles_0_to_100_step_0_5")
        if q:
            cdf.plot(q, [k * 0.5 for k in range(len(q))], label=n, color=color_of(n, i),
                     lw=2 if n.startswith("gpuos") else 1.2, ls="--" if "add" in n else "-")
    style(cdf, "round trip (us, log scale)", "percentile", xlog=10)
    ratios = r.get("ratios", {})
    cdf.set_title("gpuos/best floor ({}) p50 = {:.2f} (target <= 1.25); gpuos/ping-pong = {:.2f}; "
                  "launch/gpuos = {:.2f} (target >= 2)".format(
                      ratios.get("best_floor_method", "?"),
                      ratios.get("gpuos_nop_p50_over_best_floor_p50", float("nan")),
                      ratios.get("gpuos_nop_p50_over_ping_pong_p50", float("nan")),
                      ratios.get("launch_p50_over_gpuos_nop_p50", float("nan"))), fontsize=8)
    finish(fig, "Dispatch latency: " + subtitle(r), out)


def plot_throughput(r, out):
    methods = r["methods"]
    names = [m["name"] for m in methods]
    rates = [m["median_tasks_per_s"] / 1e6 for m in methods]
    labels = []
    for m in methods:
        if m["name"] == "graph":
            labels.append(f"CUDA graph ({r['graph_nodes']} nodes x {r['graph_replays']})")
        elif m["name"] == "launches":
            labels.append("back-to-back launches")
        elif m.get("kind") == "upper bound":
            labels.append(f"{m['name']} (GPU time)")
        else:
            labels.append(f"{m['name']} (batch {r['batch']})")
    fig, ax = plt.subplots(figsize=(10, 0.6 * len(names) + 1.8))
    y = range(len(names))
    ax.barh(list(y), rates, color=[color_of(n, i) for i, n in enumerate(names)])
    for i, v in enumerate(rates):
        ax.text(v, i, f" {v:.2f}", va="center", fontsize=8)
    ax.axvline(20, color="k", ls="--", lw=1, label="target 20 M tasks/s")
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("M tasks/s (median of repetitions, log scale); task = add of 256 floats")
    s = r.get("summary", {})
    ax.set_title("Tiny-task throughput: best gpuos = {:.1f} x launches (target >= 50), {:.1f} x graph, "
                 "{:.3f} of one kernel".format(s.get("gpuos_over_launches", float("nan")),
                                               s.get("gpuos_over_graph", float("nan")),
                                               s.get("gpuos_fraction_of_one_kernel", float("nan"))), fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    finish(fig, subtitle(r), out)


def plot_large(r, out):
    sizes = r["sizes"]
    n = [s["n"] for s in sizes]
    fig, ax = plt.subplots(figsize=(9, 5))
    ax.plot(n, [s["direct_median_gbps"] for s in sizes], "o-", color=BASELINE_COLORS[0],
            label="direct kernel (events)")
    ax.plot(n, [s["direct_wall_median_gbps"] for s in sizes], "s--", color=BASELINE_COLORS[1],
            label="direct kernel (launch + sync, host clock)")
    ax.plot(n, [s["gpuos_median_gbps"] for s in sizes], "o-", color=GPUOS_COLOR, lw=2,
            label="gpuos task (submit -> wait, host clock)")
    for s in sizes:
        ax.annotate(f"{s['gpuos_over_direct']:.2f}x", (s["n"], s["gpuos_median_gbps"]),
                    textcoords="offset points", xytext=(0, 8), ha="center", fontsize=8, color=GPUOS_COLOR)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("elements (float32), log2 scale")
    ax.set_ylabel("GB/s (12 B per element, median)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    s = r.get("summary", {})
    ax.set_title("Large add: gpuos / direct at n = {} is {} (target >= 0.9)".format(
        s.get("n"), "{:.3f}".format(s["gpuos_over_direct"]) if s.get("measured", True) and "gpuos_over_direct" in s
        else "not measured"), fontsize=10)
    finish(fig, subtitle(r), out)


def plot_alloc(r, out):
    g, c = r["gpuos"], r["cuda_malloc"]
    fig, (tp, sc) = plt.subplots(1, 2, figsize=(13, 5))
    labels = ["mixed" if p["mixed"] else str(p["bytes"]) for p in g]
    x = range(len(labels))
    tp.plot(list(x), [p["allocs_per_s"] / 1e6 for p in g], "o-", color=GPUOS_COLOR, lw=2, label="gpuos alloc")
    tp.plot(list(x), [p["frees_per_s"] / 1e6 for p in g], "o--", color=GPUOS_COLOR, alpha=0.5, label="gpuos free")
    tp.plot(list(x), [p["allocs_per_s"] / 1e6 for p in c], "s-", color=BASELINE_COLORS[0], label="CUDA malloc")
    tp.plot(list(x), [p["frees_per_s"] / 1e6 for p in c], "s--", color=BASELINE_COLORS[0], alpha=0.5,
            label="CUDA free")
    for i, (a, b) in enumerate(zip(g, c)):
        tp.annotate(f"{a['allocs_per_s'] / b['allocs_per_s']:.0f}x", (i, a["allocs_per_s"] / 1e6),
                    textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7, color=GPUOS_COLOR)
    tp.axhline(1000, color="k", ls=":", lw=1, label="target 1 G/s at 16 B")
    tp.axhline(300, color="k", ls="--", lw=1, label="target 0.3 G/s at 4 KiB")
    tp.set_xticks(list(x))
    tp.set_xticklabels(labels)
    style(tp, "request size (B)", "M operations/s (median), log scale", ylog=True, legend=7)
    tp.set_title(f"{r['threads']} threads each, one malloc per thread; gpuos: fresh heap per repetition, "
                 "CUDA: fresh context (heap) per size", fontsize=9)
    sg, scu = r["scaling_gpuos"], r["scaling_cuda_malloc"]
    sc.plot([p["threads"] for p in sg], [p["allocs_per_s"] / 1e6 for p in sg], "o-", color=GPUOS_COLOR, lw=2,
            label="gpuos")
    sc.plot([p["threads"] for p in scu], [p["allocs_per_s"] / 1e6 for p in scu], "s-", color=BASELINE_COLORS[0],
            label="CUDA malloc")
    style(sc, "threads (one 16 B malloc each)", "M allocs/s (launch included)", xlog=2, ylog=True)
    s = r.get("summary", {})
    sc.set_title("OOM fill (mixed) {:.1f}% of the pool, fragmentation (mixed) {:.1f}%".format(
        100 * s.get("oom_fill_mixed", float("nan")), 100 * s.get("fragmentation_mixed_mean", float("nan"))),
        fontsize=9)
    finish(fig, "Device heap vs CUDA device malloc: " + subtitle(r), out)


def plot_graph(r, out):
    """Chains: us per step against N for every method; the fan and the DAG: us per launch, gpuos vs CUDA graph."""
    ms = r["methods"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    names = sorted({m["name"] for m in ms if m["shape"] == "chain"}, key=lambda n: (n.startswith("gpuos"), n))
    for i, name in enumerate(names):
        pts = sorted((m["nodes"], m["median_us_per_node"]) for m in ms if m["shape"] == "chain" and m["name"] == name)
        a1.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name, color=color_of(name, i),
                linestyle={"gpuos submit + wait": "--", "gpuos submit_after": "-.", "gpuos graph (loaded image)": ":",
                           "gpuos graph, run-time op": (0, (5, 1, 1, 1))}.get(name, "-"))
    a1.axhline(0.5, color="k", linestyle=":", linewidth=1, label="target 0.5 us")
    style(a1, "dependent steps N", "us per step (median launch / N)", xlog=2, ylog=True)
    shapes = [s for s in ("fan", "dag") if any(m["shape"] == s for m in ms)]
    labels, bars, colors = [], [], []
    for s in shapes:
        for i, name in enumerate(("CUDA graph", "gpuos graph")):
            m = next((m for m in ms if m["shape"] == s and m["name"] == name), None)
            if m:
                labels.append(f"{s} ({m['nodes']})\n{name}")
                bars.append(m["median_us_per_launch"])
                colors.append(color_of(name, i))
    a2.bar(range(len(bars)), bars, color=colors)
    a2.set_xticks(range(len(bars)))
    a2.set_xticklabels(labels, fontsize=7)
    a2.set_yscale("log")
    a2.set_ylabel("us per launch (median)")
    a2.grid(True, axis="y", which="both", alpha=0.3)
    rt = r.get("round_trip_us", {})
    if rt:
        a2.set_title(f"round trip: 1-node graph {rt['graph_1_node_p50']:.1f} us, nop task {rt['nop_task_p50']:.2f} us",
                     fontsize=8)
    finish(fig, "Dependent work: chains, fan 1-128-1, random DAG\n" + subtitle(r), out)


def plot_llama(r, out):
    """examples/llama/bench_decode.py: ms per token at batch 1 against the bandwidth bound, tokens/s by batch."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    rows = [("transformers eager\n(static cache)", r.get("transformers_eager_static_ms")),
            ("transformers\nCUDA graph", r.get("cuda_graph_ms")), ("gpuos", r.get("gpuos_ms"))]
    rows = [(n, v) for n, v in rows if v]
    a.bar([n for n, _ in rows], [v for _, v in rows],
          color=[color_of("gpuos" if n == "gpuos" else n, i) for i, (n, _) in enumerate(rows)])
    for i, (_, v) in enumerate(rows):
        a.text(i, v, f"{v:.2f}\n({r['bandwidth_bound_ms_per_token'] / v:.0%} of bound)", ha="center", va="bottom",
               fontsize=8)
    a.axhline(r["bandwidth_bound_ms_per_token"], color="k", ls="--", lw=1,
              label=f"bandwidth bound {r['bandwidth_bound_ms_per_token']:.2f} ms "
                    f"({r['weight_bytes_per_token'] / 1e9:.2f} GB / {r['copy_bandwidth_GBps']:.0f} GB/s)")
    a.set_ylim(0, max(v for _, v in rows) * 1.3)
    style(a, "", "ms per generated token, batch 1")
    bs = sorted(r["gpuos"], key=int)
    b.plot([int(x) for x in bs], [r["gpuos"][x]["tokens_per_s"] for x in bs], "o-", color=GPUOS_COLOR, label="gpuos")
    if r.get("cuda_graph_ms"):
        b.plot([1], [1e3 / r["cuda_graph_ms"]], "s", color=BASELINE_COLORS[1], label="transformers CUDA graph, batch 1")
    style(b, "batch (sequences decoding together)", "generated tokens/s")
    finish(fig, f"Llama-3.2-1B shape, bf16, decode after a {r['prompt_len']}-token prompt: {r['device']}", out)


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description="Plots the gpuos benchmark JSON results.")
    ap.add_argument("results", nargs="?", default=".", help="directory with the bench_*.json files")
    ap.add_argument("--out", default=os.path.join(repo, "docs"), help="where the PNG files go")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    plots = [("bench_dispatch", plot_dispatch), ("bench_throughput", plot_throughput), ("bench_graph", plot_graph),
             ("bench_large", plot_large), ("bench_alloc", plot_alloc), ("bench_llama", plot_llama)]
    done = 0
    for name, fn in plots:
        r = load(os.path.join(a.results, name + ".json"))
        if r is None:
            continue
        out = os.path.join(a.out, name + ".png")
        fn(r, out)
        print(f"plot: wrote {out}")
        done += 1
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
