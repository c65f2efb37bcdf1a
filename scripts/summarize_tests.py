#!/usr/bin/env python3
"""Prints the closing test summary of scripts/test.sh from meson's JSON test logs.

usage: summarize_tests.py --build BUILD_DIR --since EPOCH --unit-log JSON [--unit-status N]
                          (--gpu-log JSON [--gpu-status N] | --gpu-not-run WHY) [--fail REASON]...

Every test meson ran is listed with doctest's own counts. A test that failed, crashed or timed out
without doctest's summary line counts as one failed test case; so does a test meson knows about
(build/meson-info/intro-tests.json) that is not in its suite's log. A log that is missing, or older
than --since (a previous run's), means the suite has no results: that is a failure, never a pass.
A suite whose `meson test` exited non-zero (--unit-status, --gpu-status) fails even when its log
shows no failure. When the GPU suites did not run, their test cases (doctest --list-test-cases) count
as skipped.
--fail adds a failure found by the caller (scripts/test.sh: the GPU probe, GPUOS_REQUIRE_GPU).

The last line is the verdict: the totals, then OK or FAILED and what failed.
Exit status: 0 when nothing failed, 1 when something did, 2 on a usage error."""
import argparse
import glob
import json
import os
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET

DOCTEST_SUMMARY = re.compile(
    r'\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped')
DOCTEST_LISTED = re.compile(r'\[doctest\] unskipped test cases passing the current filters:\s*(\d+)')
SUITES = ('unit', 'gpu', 'python')


def expected_tests(build):
    """{suite: [(test name, command)]} from meson's introspection, or None when it is missing."""
    path = os.path.join(build, 'meson-info', 'intro-tests.json')
    try:
        with open(path) as f:
            tests = json.load(f)
    except (OSError, ValueError):
        return None
    out = {}
    for t in tests:
        for s in t.get('suite', []):
            # meson spells a suite 'PROJECT:SUITE'
            out.setdefault(s.rsplit(':', 1)[-1], []).append((t['name'], t.get('cmd', [])))
    return out


def split_name(name):
    """meson's JSON log names a test 'SUITE - PROJECT:NAME' (suites joined with '+')."""
    suites, _, rest = name.rpartition(' - ')
    return suites.split('+') if suites else [], rest.rsplit(':', 1)[-1]


def exit_text(rc):
    if rc is None:
        return 'no exit status'
    if rc < 0:  # meson reports a program killed by a signal as minus the signal
        try:
            return 'killed by %s' % signal.Signals(-rc).name
        except ValueError:
            return 'killed by signal %d' % -rc
    return 'exit status %d' % rc


class Suite:
    def __init__(self, name):
        self.name = name
        self.passed = self.failed = self.skipped = 0
        self.lines = []       # one per test meson ran (or should have)
        self.problems = []    # (short, long): why the suite failed, beyond its failed test cases
        self.ran = False      # results from this run were found

    def fail_text(self):
        parts = ['%d failed' % self.failed] if self.ran and self.failed else []
        parts += [short for short, _ in self.problems]
        return '%s suite (%s)' % (self.name, '; '.join(parts))


def read_log(suite, path, since, expected):
    """Fills suite from one meson JSON log; False when there are no results from this run."""
    if not os.path.exists(path):
        suite.problems.append(('no results', 'no results: %s not found (meson test did not run)' % path))
        return False
    if os.path.getmtime(path) < since:
        suite.problems.append(('no results', "no results: %s is older than this run (a previous run's)" % path))
        return False
    seen = set()
    try:
        with open(path) as f:
            entries = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        suite.problems.append(('no results', 'no results: %s is unreadable (%s)' % (path, e)))
        return False
    for t in entries:
        suites, name = split_name(t.get('name', '?'))
        if suites and suite.name not in suites:
            continue  # not this suite's test
        seen.add(name)
        start = t.get('starttime')
        if isinstance(start, (int, float)) and start < since:
            suite.lines.append('  %s/%s: STALE (started before this run), counted as 1 failed' % (suite.name, name))
            suite.failed += 1
            continue
        result = t.get('result', '?')
        found = DOCTEST_SUMMARY.findall(t.get('stdout') or '')
        ok = result in ('OK', 'EXPECTEDFAIL')
        if found:
            _, p, f, s = (int(x) for x in found[-1])
            note = ''
            if not ok and f == 0:
                f = 1
                note = ', counted as 1 failed'
            text = '%d passed, %d failed, %d skipped%s' % (p, f, s, note)
        else:
            p, f, s = (1, 0, 0) if ok else (0, 1, 0)
            text = 'no doctest summary, counted as 1 %s' % ('passed' if ok else 'failed')
        if ok:
            status = result
        else:
            status = '%s (%s)' % (result, exit_text(t.get('returncode')))
        suite.lines.append('  %s/%s: %s, %s' % (suite.name, name, status, text))
        suite.passed += p
        suite.failed += f
        suite.skipped += s
    if not seen:
        suite.problems.append(('no results', 'no results: %s lists no test of this suite' % path))
        return False
    suite.ran = True
    for name, _ in (expected or {}).get(suite.name, []):
        if name not in seen:
            suite.lines.append('  %s/%s: DID NOT RUN, counted as 1 failed' % (suite.name, name))
            suite.failed += 1
    return True


def read_junit(suite, path, since, status):
    """The Python suite: pytest's JUnit XML (tests, failures, errors, skipped), fresh from this run."""
    if not os.path.exists(path) or os.path.getmtime(path) < since:
        suite.problems.append(('no results', 'no pytest results from this run in %s (%s)' % (path, exit_text(status))))
        return
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        suite.problems.append(('unreadable results', 'pytest results in %s are not valid XML: %s' % (path, e)))
        return
    cases = root.iter('testcase')
    suite.ran = True
    for c in cases:
        name = '%s.%s' % (c.get('classname', ''), c.get('name', ''))
        if c.find('failure') is not None or c.find('error') is not None:
            suite.failed += 1
            suite.lines.append('  python/%s: FAIL' % name)
        elif c.find('skipped') is not None:
            suite.skipped += 1
            why = c.find('skipped').get('message', '')
            suite.lines.append('  python/%s: skipped (%s)' % (name, why))
        else:
            suite.passed += 1
    if status and not suite.failed:
        suite.problems.append(('pytest exited with status %d' % status,
                               'pytest exited with status %d though no test in its results failed' % status))


def count_not_run(build, expected):
    """Number of GPU test cases (doctest --list-test-cases), and the binaries it could not list."""
    if expected is not None:
        cmds = [(name, cmd) for name, cmd in expected.get('gpu', [])]
    else:
        cmds = [(os.path.basename(exe), [exe])
                for exe in sorted(glob.glob(os.path.join(build, 'tests', 'gpuos_gpu_*')))
                if os.path.isfile(exe) and os.access(exe, os.X_OK)]
    n, unlisted = 0, []
    for name, cmd in cmds:
        try:
            out = subprocess.run(cmd + ['--list-test-cases'], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            out = ''
        m = DOCTEST_LISTED.search(out)
        if m:
            n += int(m.group(1))
        else:
            unlisted.append(name)
    return n, unlisted


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', required=True, help='the build directory')
    ap.add_argument('--since', required=True, type=float,
                    help='when this run started (seconds since the epoch): older logs are stale')
    ap.add_argument('--unit-log', required=True, help="the CPU suite's meson JSON log")
    ap.add_argument('--unit-status', type=int, default=0, help="the exit status of the CPU suite's meson test")
    ap.add_argument('--gpu-status', type=int, default=0, help="the exit status of the GPU suites' meson test")
    gpu = ap.add_mutually_exclusive_group(required=True)
    gpu.add_argument('--gpu-log', help="the GPU suites' meson JSON log")
    gpu.add_argument('--gpu-not-run', metavar='WHY', help='the GPU suites did not run, and why')
    ap.add_argument('--python-junit', metavar='PATH', help="the Python suite's pytest JUnit XML")
    ap.add_argument('--python-status', type=int, default=0, help="the exit status of the Python suite's pytest")
    ap.add_argument('--fail', action='append', default=[], metavar='REASON',
                    help='a failure the caller found (may be repeated)')
    a = ap.parse_args(argv)

    expected = expected_tests(a.build)
    suites = {name: Suite(name) for name in SUITES}
    read_log(suites['unit'], a.unit_log, a.since, expected)
    if a.gpu_log is not None:
        read_log(suites['gpu'], a.gpu_log, a.since, expected)
    if a.python_junit is not None:
        read_junit(suites['python'], a.python_junit, a.since, a.python_status)
    else:
        del suites['python']
    for s, status in ((suites['unit'], a.unit_status), (suites['gpu'], a.gpu_status)):
        if status and s.ran and not s.failed and not s.problems:
            s.problems.append(('meson test exited with status %d' % status,
                               'meson test exited with status %d though no test in its log failed' % status))

    for s in suites.values():
        for line in s.lines:
            print(line)
        if s.problems and not s.ran:
            s.failed = max(s.failed, 1)  # a suite without results is never "0 failed"

    passed = sum(s.passed for s in suites.values())
    failed = sum(s.failed for s in suites.values())
    skipped = sum(s.skipped for s in suites.values())

    for s in suites.values():
        if s.name == 'gpu' and a.gpu_log is None:
            n, unlisted = count_not_run(a.build, expected)
            skipped += n
            print('GPU suites did NOT run: %s' % (a.gpu_not_run or 'no usable CUDA device'))
            print('  (%d GPU test cases not run)' % n)
            if unlisted:
                print('  (could not list the test cases of: %s)' % ', '.join(unlisted))
            print('gpu: not run (%d test cases skipped)' % n)
            continue
        if s.ran:
            print('%s: %d passed, %d failed, %d skipped' % (s.name, s.passed, s.failed, s.skipped))
        else:
            print('%s: no results (counted as %d failed)' % (s.name, s.failed))
        for _, detail in s.problems:
            print('  %s' % detail)

    reasons = [s.fail_text() for s in suites.values() if s.failed or s.problems] + a.fail
    verdict = 'tests: %d passed, %d failed, %d skipped' % (passed, failed, skipped)
    if reasons:
        print('%s -- FAILED: %s' % (verdict, '; '.join(reasons)))
        return 1
    print('%s -- OK%s' % (verdict, ' (GPU suites not run)' if a.gpu_log is None else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
