#!/usr/bin/env python3
"""The headline numbers of an A/B (bench/ab.sh): per benchmark and build, every round's value and the median.

usage: ab_summary.py OUT_DIR"""
import glob
import json
import os
import re
import statistics
import sys

HEADLINES = {
    'dispatch': [('gpuos nop p50 us', lambda d: d['methods']['gpuos nop']['p50']),
                 ('gpuos nop p99 us', lambda d: d['methods']['gpuos nop']['p99']),
                 ('ping-pong p50 us', lambda d: d['methods']['ping-pong']['p50']),
                 ('best floor p50 us', lambda d: d['ratios']['best_floor_p50']),
                 ('nop / best floor', lambda d: d['ratios']['gpuos_nop_p50_over_best_floor_p50'])],
    'throughput': [('best gpuos M tasks/s', lambda d: d['summary']['best_gpuos_tasks_per_s'] / 1e6),
                   ('gpuos / one kernel', lambda d: d['summary']['gpuos_fraction_of_one_kernel'])],
    # summary holds the 64M target size; without it (a run without 64M) the rows are left out.
    'large': [('64M gpuos / direct', lambda d: d['summary']['gpuos_over_direct']),
              ('64M gpuos GB/s', lambda d: d['summary']['gpuos_median_gbps'])],
    'hotpatch': [('switch pause seen p50 us', lambda d: d['switch_gap_observed_us']['p50']),
                 ('switch pause seen p99 us', lambda d: d['switch_gap_observed_us']['p99']),
                 ('switch pause (runtime) p50 us', lambda d: d['switch_pause_us']['p50']),
                 ('switch pause (runtime) p99 us', lambda d: d['switch_pause_us']['p99']),
                 ('save->serve cold p50 ms', lambda d: d['save_to_new_code_cold_ms']['p50']),
                 ('save->serve warm p50 ms', lambda d: d['save_to_new_code_warm_ms']['p50'])],
}


def main(out):
    runs = {}
    for path in glob.glob(os.path.join(out, '*_*_*.json')):
        m = re.match(r'(\w+)_([AB])_(\d+)\.json$', os.path.basename(path))
        if not m:
            continue
        try:
            runs.setdefault((m.group(1), m.group(2)), []).append((int(m.group(3)), json.load(open(path))))
        except (OSError, ValueError):
            continue
    print('%-30s %-4s %-40s %s' % ('metric', 'side', 'rounds', 'median'))
    for part, metrics in HEADLINES.items():
        for name, get in metrics:
            for side in 'AB':
                vals = []
                for _, d in sorted(runs.get((part, side), []), key=lambda x: x[0]):
                    try:
                        vals.append(float(get(d)))
                    except (KeyError, TypeError):
                        pass
                if vals:
                    print('%-30s %-4s %-40s %.3f' % (name, side, ' '.join('%.3f' % v for v in vals),
                                                     statistics.median(vals)))


if __name__ == '__main__':
    main(sys.argv[1])
