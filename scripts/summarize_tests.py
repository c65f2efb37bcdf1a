#!/usr/bin/env python3
"""Prints the test summary: per suite, doctest's counts; GPU cases that did not run count as skipped.

usage: summarize_tests.py TESTLOG_JSON GPU_RAN(0|1) BUILD_DIR [WHY_NOT]"""
import glob
import json
import os
import re
import subprocess
import sys

log, gpu_ran, build = sys.argv[1], sys.argv[2] == '1', sys.argv[3]
why = sys.argv[4] if len(sys.argv) > 4 else ''
pat = re.compile(r'\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped')

passed = failed = skipped = 0
suites = {}
if os.path.exists(log):
    for line in open(log):
        t = json.loads(line)
        m = pat.search(t.get('stdout', '') or '')
        p, f = (int(m.group(2)), int(m.group(3))) if m else (0, 0)
        if not m or t.get('result') not in ('OK', 'EXPECTEDFAIL'):
            f = max(f, 1)  # crashed or failed without a doctest summary
        # meson names a test 'NAME - PROJECT:SUITE'
        suite = t['name'].rsplit(':', 1)[-1] if ':' in t.get('name', '') else 'other'
        s = suites.setdefault(suite, [0, 0])
        s[0] += p
        s[1] += f
        passed += p
        failed += f

if not gpu_ran:
    n = 0
    for exe in sorted(glob.glob(os.path.join(build, 'tests', 'gpuos_gpu_*'))):
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            continue
        out = subprocess.run([exe, '--list-test-cases'], capture_output=True, text=True).stdout
        m = re.search(r'\[doctest\] unskipped test cases passing the current filters:\s*(\d+)', out)
        n += int(m.group(1)) if m else 0
    skipped = n
    print('GPU suites did NOT run: %s' % (why or 'no usable CUDA device'))
    print('  (%d GPU test cases not run; they need a machine with a CUDA device)' % n)

for name, (p, f) in sorted(suites.items()):
    print('%s: %d passed, %d failed' % (name, p, f))
print('tests: %d passed, %d failed, %d skipped' % (passed, failed, skipped))
