#!/usr/bin/env python3
"""Tests of scripts/summarize_tests.py (the closing summary of scripts/test.sh), on made-up meson logs.
Standard library only: python3 tests/scripts/test_summarize.py"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARIZE = os.path.join(HERE, '..', '..', 'scripts', 'summarize_tests.py')


def doctest_out(passed, failed, skipped=0):
    return ('[doctest] doctest version is "2.4.11"\n'
            '[doctest] test cases: %d | %d passed | %d failed | %d skipped\n'
            '[doctest] Status: %s!\n' % (passed + failed, passed, failed, skipped,
                                         'FAILURE' if failed else 'SUCCESS'))


def entry(suite, name, stdout, result='OK', returncode=0, start=None):
    return {'name': '%s - gpuos:%s' % (suite, name), 'stdout': stdout, 'result': result,
            'is_fail': result not in ('OK', 'EXPECTEDFAIL', 'SKIP'), 'returncode': returncode,
            'starttime': time.time() if start is None else start, 'duration': 0.1, 'env': {},
            'command': [name]}


class Summarize(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.build = self.tmp.name
        self.since = time.time() - 5
        os.makedirs(os.path.join(self.build, 'meson-info'))
        os.makedirs(os.path.join(self.build, 'meson-logs'))
        os.makedirs(os.path.join(self.build, 'tests'))
        tests = [{'name': 'unit', 'suite': ['gpuos:unit'], 'cmd': [self.stub('gpuos_unit_tests', 10)]}]
        for name, n in (('gpu-a', 3), ('gpu-b', 4)):
            tests.append({'name': name, 'suite': ['gpuos:gpu'], 'cmd': [self.stub('gpuos_' + name, n)]})
        with open(os.path.join(self.build, 'meson-info', 'intro-tests.json'), 'w') as f:
            json.dump(tests, f)
        self.unit_log = os.path.join(self.build, 'meson-logs', 'testlog-unit.json')
        self.gpu_log = os.path.join(self.build, 'meson-logs', 'testlog-gpu.json')

    def tearDown(self):
        self.tmp.cleanup()

    def stub(self, name, cases):
        """A test binary that only answers --list-test-cases like doctest does."""
        path = os.path.join(self.build, 'tests', name.replace('-', '_'))
        with open(path, 'w') as f:
            f.write('#!/bin/sh\necho "[doctest] unskipped test cases passing the current filters: %d"\n' % cases)
        os.chmod(path, 0o755)
        return path

    def write(self, path, entries):
        with open(path, 'w') as f:
            for e in entries:
                f.write(json.dumps(e) + '\n')

    def run_summary(self, *extra, gpu=None):
        gpu_args = ['--gpu-log', self.gpu_log] if gpu else ['--gpu-not-run', 'no device here']
        p = subprocess.run([sys.executable, SUMMARIZE, '--build', self.build, '--since', str(self.since),
                            '--unit-log', self.unit_log] + gpu_args + list(extra),
                           capture_output=True, text=True)
        lines = p.stdout.strip().splitlines()
        return p.returncode, p.stdout, lines[-1] if lines else ''

    def junit(self, passed, failed, skipped):
        path = os.path.join(self.build, 'meson-logs', 'pytest.xml')
        cases = ['<testcase classname="t" name="ok%d"/>' % i for i in range(passed)]
        cases += ['<testcase classname="t" name="bad%d"><failure message="x"/></testcase>' % i for i in range(failed)]
        cases += ['<testcase classname="t" name="gpu%d"><skipped message="GPU test not run"/></testcase>' % i
                  for i in range(skipped)]
        with open(path, 'w') as f:
            f.write('<testsuites><testsuite>%s</testsuite></testsuites>' % ''.join(cases))
        return path

    def test_python_suite_counts_in_the_verdict(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(10, 0))])
        rc, out, last = self.run_summary('--python-junit', self.junit(5, 0, 2))
        self.assertEqual(rc, 0, out)
        self.assertIn('python: 5 passed, 0 failed, 2 skipped', out)
        self.assertIn('python/t.gpu0: skipped (GPU test not run)', out)
        self.assertTrue(last.startswith('tests: 15 passed, 0 failed, 9 skipped -- OK'), last)

    def test_python_failure_or_missing_results_fail(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(10, 0))])
        rc, out, last = self.run_summary('--python-junit', self.junit(5, 1, 0), '--python-status', '1')
        self.assertEqual(rc, 1, out)
        self.assertIn('python suite (1 failed)', last)
        rc, out, last = self.run_summary('--python-junit', os.path.join(self.build, 'none.xml'), '--python-status', '4')
        self.assertEqual(rc, 1, out)
        self.assertIn('python suite (no results)', last)
        path = self.junit(3, 0, 0)
        rc, out, last = self.run_summary('--python-junit', path, '--python-status', '2')
        self.assertEqual(rc, 1, out)
        self.assertIn('pytest exited with status 2', last)

    def test_unit_passes_gpu_skipped(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(10, 0))])
        rc, out, last = self.run_summary()
        self.assertEqual(rc, 0, out)
        self.assertIn('GPU suites did NOT run: no device here', out)
        self.assertIn('7 GPU test cases not run', out)
        self.assertEqual(last, 'tests: 10 passed, 0 failed, 7 skipped -- OK (GPU suites not run)')

    def test_unit_failure_is_the_verdict(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(8, 2), 'FAIL', 1)])
        rc, out, last = self.run_summary()
        self.assertEqual(rc, 1, out)
        self.assertIn('unit/unit: FAIL (exit status 1), 8 passed, 2 failed', out)
        self.assertTrue(last.startswith('tests: 8 passed, 2 failed, 7 skipped -- FAILED: unit suite (2 failed)'),
                        last)

    def test_unit_failure_shows_when_gpu_passes(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(9, 1), 'FAIL', 1)])
        self.write(self.gpu_log, [entry('gpu', 'gpu-a', doctest_out(3, 0)), entry('gpu', 'gpu-b', doctest_out(4, 0))])
        rc, out, last = self.run_summary(gpu=True)
        self.assertEqual(rc, 1, out)
        for name in ('unit/unit', 'gpu/gpu-a', 'gpu/gpu-b'):
            self.assertIn(name, out)
        self.assertIn('unit: 9 passed, 1 failed', out)
        self.assertIn('gpu: 7 passed, 0 failed', out)
        self.assertEqual(last, 'tests: 16 passed, 1 failed, 0 skipped -- FAILED: unit suite (1 failed)')

    def test_everything_passes_with_gpu(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(10, 0, 1))])
        self.write(self.gpu_log, [entry('gpu', 'gpu-a', doctest_out(3, 0)), entry('gpu', 'gpu-b', doctest_out(4, 0))])
        rc, out, last = self.run_summary(gpu=True)
        self.assertEqual(rc, 0, out)
        self.assertEqual(last, 'tests: 17 passed, 0 failed, 1 skipped -- OK')

    def test_crash_without_doctest_summary_counts_as_a_failure(self):
        self.write(self.unit_log, [entry('unit', 'unit', '[doctest] doctest version is "2.4.11"\n', 'FAIL', -11)])
        rc, out, last = self.run_summary()
        self.assertEqual(rc, 1, out)
        self.assertIn('unit/unit: FAIL (killed by SIGSEGV), no doctest summary, counted as 1 failed', out)
        self.assertIn('0 passed, 1 failed', last)
        self.assertIn('FAILED: unit suite (1 failed)', last)

    def test_failed_binary_with_clean_doctest_summary_still_fails(self):
        # e.g. a crash in a destructor after doctest printed its summary, or a timeout
        self.write(self.gpu_log, [entry('gpu', 'gpu-a', doctest_out(3, 0), 'TIMEOUT', None),
                                  entry('gpu', 'gpu-b', doctest_out(4, 0))])
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(10, 0))])
        rc, out, last = self.run_summary(gpu=True)
        self.assertEqual(rc, 1, out)
        self.assertIn('gpu/gpu-a: TIMEOUT (no exit status), 3 passed, 1 failed', out)
        self.assertIn('FAILED: gpu suite (1 failed)', last)

    def test_missing_log_is_no_results(self):
        rc, out, last = self.run_summary()
        self.assertEqual(rc, 1, out)
        self.assertIn('not found', out)
        self.assertIn('FAILED: unit suite (no results)', last)
        self.assertNotIn('0 failed', last)

    def test_missing_gpu_log_when_gpu_ran(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(10, 0))])
        rc, out, last = self.run_summary(gpu=True)
        self.assertEqual(rc, 1, out)
        self.assertIn('FAILED: gpu suite (no results)', last)

    def test_stale_log_is_no_results(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(10, 0), start=self.since - 3600)])
        old = self.since - 3600
        os.utime(self.unit_log, (old, old))
        rc, out, last = self.run_summary()
        self.assertEqual(rc, 1, out)
        self.assertIn('older than this run', out)
        self.assertIn('FAILED: unit suite (no results)', last)

    def test_stale_entry_in_a_fresh_log(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(10, 0), start=self.since - 3600)])
        rc, out, last = self.run_summary()
        self.assertEqual(rc, 1, out)
        self.assertIn('unit/unit: STALE (started before this run), counted as 1 failed', out)
        self.assertEqual(last, 'tests: 0 passed, 1 failed, 7 skipped -- FAILED: unit suite (1 failed)')

    def test_test_missing_from_log_counts_as_a_failure(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(10, 0))])
        self.write(self.gpu_log, [entry('gpu', 'gpu-a', doctest_out(3, 0))])
        rc, out, last = self.run_summary(gpu=True)
        self.assertEqual(rc, 1, out)
        self.assertIn('gpu/gpu-b: DID NOT RUN, counted as 1 failed', out)
        self.assertIn('FAILED: gpu suite (1 failed)', last)

    def test_caller_failures_are_in_the_verdict(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(10, 0))])
        rc, out, last = self.run_summary('--fail', 'GPUOS_REQUIRE_GPU=1 but the GPU suites did not run')
        self.assertEqual(rc, 1, out)
        self.assertEqual(last, 'tests: 10 passed, 0 failed, 7 skipped -- FAILED: '
                               'GPUOS_REQUIRE_GPU=1 but the GPU suites did not run')

    def test_meson_failure_with_a_clean_log_still_fails(self):
        self.write(self.unit_log, [entry('unit', 'unit', doctest_out(10, 0))])
        rc, out, last = self.run_summary('--unit-status', '1')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAILED: unit suite (meson test exited with status 1)', last)

    def test_usage_error(self):
        p = subprocess.run([sys.executable, SUMMARIZE, '--build', self.build], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)


if __name__ == '__main__':
    unittest.main()
