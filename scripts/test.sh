#!/usr/bin/env bash
# Sets up, builds and runs every test suite. The CPU suite always runs; the GPU suites run when a CUDA
# device is usable (`gpuos info` exits 0). When the probe finds no device or driver (exit 3) they are
# skipped and this says so plainly; any other failure of the probe fails the run.
# The Python package is built and installed with pip into build/python-venv and its pytest suites run
# (python/tests, and examples/llama/tests for the Llama example).
# GPUOS_REQUIRE_GPU=1 (for machines that have a GPU): GPU suites that did not run fail the run.
# The summary (scripts/summarize_tests.py) counts every suite and ends with the verdict.
# Exit status: 0 when every suite that ran passed (and, under GPUOS_REQUIRE_GPU=1, the GPU suites ran);
# 1 otherwise; 2 when GPUOS_REQUIRE_GPU is not unset, empty, 0 or 1.
set -uo pipefail
cd "$(dirname "$0")/.."

say() { printf 'test: %s\n' "$*"; }

case "${GPUOS_REQUIRE_GPU-}" in
  '' | 0) require_gpu=0 ;;
  1) require_gpu=1 ;;
  *)
    say "GPUOS_REQUIRE_GPU must be unset, empty, 0 or 1; it is '${GPUOS_REQUIRE_GPU}'"
    exit 2
    ;;
esac

bash scripts/setup.sh || { say "setup or build failed: no test ran"; exit 1; }

rc=0
summary_args=()  # what this script found (suite exit statuses, failures), for the summary

# The summary's own test (standard library only).
if ! python3 tests/scripts/test_summarize.py; then
  rc=1
  summary_args+=(--fail "tests/scripts/test_summarize.py failed")
fi

# meson test rewrites its log on every call: each suite gets its own, and a previous run's are removed
# first (the summary also ignores a log older than $start), so old results cannot pass for this run's.
logs=build/meson-logs
start=$(date +%s)
rm -f "$logs/testlog-unit.json" "$logs/testlog-gpu.json"

meson test -C build --suite unit --print-errorlogs --no-rebuild --logbase testlog-unit
unit_status=$?
[ $unit_status -eq 0 ] || rc=1
summary_args+=(--unit-status "$unit_status")

# The Python package, built and installed from this checkout by pip (meson-python runs this project's
# Meson build) into a virtual environment of its own, then its tests. Its GPU tests skip, saying so,
# without a usable device.
venv=build/python-venv
py_status=0
rm -f "$logs/pytest.xml"
say "building and installing the Python package (pip install .) into $venv"
if python3 -m venv --clear "$venv" >"$logs/python-install.log" 2>&1 &&
  "$venv/bin/python" -m pip install --disable-pip-version-check . pytest prometheus_client numpy >>"$logs/python-install.log" 2>&1; then
  # From python/tests, so that `import gpuos` is the installed package, not the source folder.
  (cd python/tests && "../../$venv/bin/python" -m pytest -q -rs --junitxml="../../$logs/pytest.xml" . ../../examples/llama/tests)
  py_status=$?
else
  py_status=1
  say "the Python package did not build or install; the end of $logs/python-install.log:"
  tail -n 30 "$logs/python-install.log" | sed 's/^/test:   | /'
  rc=1
  summary_args+=(--fail "the Python package did not build or install")
fi
[ $py_status -eq 0 ] || rc=1
summary_args+=(--python-junit "$logs/pytest.xml" --python-status "$py_status")

probe=$(build/tools/gpuos info 2>&1)
probe_rc=$?
if [ $probe_rc -eq 0 ]; then
  meson test -C build --suite gpu --print-errorlogs --no-rebuild --logbase testlog-gpu
  gpu_status=$?
  [ $gpu_status -eq 0 ] || rc=1
  summary_args+=(--gpu-log "$logs/testlog-gpu.json" --gpu-status "$gpu_status")
elif [ $probe_rc -eq 3 ]; then
  why=$(printf '%s\n' "$probe" | tail -n 1)
  say "GPU suites skipped: no usable CUDA device or driver (build/tools/gpuos info exit 3: ${why:-no output})"
  summary_args+=(--gpu-not-run "no usable CUDA device or driver (gpuos info: ${why:-no output})")
else
  if [ $probe_rc -gt 128 ]; then
    sig=$(kill -l $((probe_rc - 128)) 2>/dev/null)
    how="killed by signal $((probe_rc - 128))${sig:+ (SIG$sig)}, exit status $probe_rc"
  else
    how="exit status $probe_rc"
  fi
  say "the GPU probe 'build/tools/gpuos info' failed: $how (not 3, which means no device); its output:"
  printf '%s\n' "${probe:-(none)}" | sed 's/^/test:   | /'
  rc=1
  summary_args+=(--gpu-not-run "the GPU probe failed ($how)" --fail "GPU probe 'gpuos info' failed ($how)")
fi
if [ $probe_rc -ne 0 ] && [ $require_gpu -eq 1 ]; then
  say "GPUOS_REQUIRE_GPU=1: the GPU suites did not run, so this run fails"
  rc=1
  summary_args+=(--fail "GPUOS_REQUIRE_GPU=1 but the GPU suites did not run")
fi

# Summary from doctest's own counts in meson's logs; GPU test cases that did not run are listed as skipped.
python3 scripts/summarize_tests.py --build build --since "$start" --unit-log "$logs/testlog-unit.json" \
  "${summary_args[@]}" || rc=1
exit $rc
