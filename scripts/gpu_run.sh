#!/usr/bin/env bash
# Runs the GPU suites and the benchmarks straight from a build, with no setup step: for a GPU machine
# that has the CUDA driver but no network (build elsewhere, bring the build folder along).
#
#   scripts/gpu_run.sh OUT_DIR [BUILD_DIR] [PART...]
#
# PART: tests (every GPU suite binary), sanitize (the GPU suites under compute-sanitizer: SANITIZE_TOOLS,
# default "memcheck racecheck synccheck"; SANITIZE_ARGS, extra arguments of each suite, e.g. a doctest
# filter; SANITIZE_SUITES, the suites to run, e.g. "runtime graphs", default every one but stream, which
# hangs under the tools (docs/design.md, Known limits: it runs only when named here); SANITIZE_SCALE,
# what the suites' long loops are divided by, GPUOS_TEST_SCALE, default 100; SANITIZE_SMS, the SMs the
# resident kernel occupies, GPUOS_SM_BUDGET, default 8: the tools slow every thread that runs; the
# watchdog's deadlines are multiplied by the scale too, GPUOS_DEADLINE_SCALE),
# run (gpuos run --ops-dir examples/ops), dispatch, throughput,
# graph, sharing, large, hotpatch, alloc, module, python (the Python package's pytest suite and the Llama
# example's), llama (the Llama example's server under load with operators swapped, tiny weights), soak
# (tests/gpuos_gpu_soak at full length: SOAK_SECONDS of mixed load; the tests part runs it for its
# default 120 s); default: tests run dispatch throughput graph sharing large hotpatch.
# Environment: REPEAT (runs of each test binary, default 1), STEP_TIMEOUT (seconds per step, default 300),
# SOAK_SECONDS (the soak part's length, whole seconds, default 1800; its step may run SOAK_SECONDS + 600 s,
# or STEP_TIMEOUT where that is longer: boot, compiles, the workers' last rounds and the drain),
# BENCH_ARGS_<part> (extra arguments of that benchmark, e.g. BENCH_ARGS_large="--sizes 67108864"); for
# python and llama: WHEEL (the package built elsewhere, `pip wheel --no-deps .`, for this machine's
# Python), PYTHON (default python3, which needs pytest, and for the GPU tests torch, transformers and
# safetensors).
# Logs and JSON go to OUT_DIR/logs, packed into OUT_DIR/logs.tar.gz; a summary line per step goes to
# OUT_DIR/summary.txt (and stdout). Exit status: 0 when every step passed (a benchmark passes when it met
# every target).
set -u
out=${1:?usage: scripts/gpu_run.sh OUT_DIR [BUILD_DIR] [PART...]}
build=${2:-build}
shift $(( $# >= 2 ? 2 : $# ))
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(tests run dispatch throughput graph sharing large hotpatch)
repeat=${REPEAT:-1}
limit=${STEP_TIMEOUT:-300}
logs=$out/logs
mkdir -p "$logs"
summary=$out/summary.txt
status=0

# run_limited LOG COMMAND...: the command with its output in LOG, stopped after $limit seconds (exit
# 124). A command still running then first gets its threads written to LOG: name, state, kernel wait
# channel, system call, and, where cuda-gdb is there, every thread's backtrace; a hang says where it is.
run_limited() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 &
  local pid=$! ticks=0 p procs
  while kill -0 "$pid" 2>/dev/null; do
    if [ $ticks -ge $((limit * 10)) ]; then
      {
        echo "gpu_run: still running after ${limit} s; its threads (and its children's: a tool runs the test"
        echo "as its child):"
        procs=$pid
        for p in $(pgrep -P "$pid"); do procs="$procs $p $(pgrep -P "$p" | tr '\n' ' ')"; done
        for p in $procs; do
          echo "  process $p: $(tr '\0' ' ' < /proc/"$p"/cmdline 2>/dev/null | cut -c1-200)"
          for t in /proc/"$p"/task/*; do
            echo "  tid $(basename "$t") $(cat "$t"/comm 2>/dev/null) state=$(awk '{print $3}' "$t"/stat 2>/dev/null)" \
                 "wchan=$(cat "$t"/wchan 2>/dev/null) syscall=$(cut -d' ' -f1 "$t"/syscall 2>/dev/null)"
            sed 's/^/      /' "$t"/stack 2>/dev/null | head -n 12
          done
          if command -v cuda-gdb >/dev/null; then
            timeout 90 cuda-gdb -q -batch -p "$p" -ex "info threads" -ex "thread apply all bt 20" 2>&1 | tail -n 300
          fi
        done
      } >>"$log" 2>&1
      kill -TERM $procs 2>/dev/null
      sleep 10
      kill -KILL $procs 2>/dev/null
      wait "$pid" 2>/dev/null
      return 124
    fi
    sleep 0.1
    ticks=$((ticks + 1))
  done
  wait "$pid"
}

step() {  # step NAME LOG COMMAND...
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS
  run_limited "$log" "$@"
  local rc=$?
  local verdict=pass
  if [ $rc -ne 0 ]; then
    verdict="FAIL (exit $rc)"
    [ $rc -eq 124 ] && verdict="FAIL (timed out)"
    # A benchmark that ran and checked its results but missed a target (bench/README.md: exit statuses).
    [ $rc -eq 4 ] && verdict="TARGET MISSED (exit 4)"
    # `gpuos run`: the device faulted, or the runtime's watchdog gave up (tools/gpuos.cpp: exit statuses).
    [ $rc -eq 5 ] && verdict="DEVICE FAULT (exit 5)"
    [ $rc -eq 6 ] && verdict="HUNG (exit 6)"
    status=1
  fi
  printf '%-28s %-24s %4ds\n' "$name" "$verdict" $((SECONDS - t0)) | tee -a "$summary"
  return $rc
}

"$build/tools/gpuos" info >"$logs/gpuos_info.txt" 2>&1 || { echo "gpu_run: no usable CUDA device"; cat "$logs/gpuos_info.txt"; exit 3; }
head -n 3 "$logs/gpuos_info.txt" | tee -a "$summary"

for part in "${parts[@]}"; do
  case $part in
    tests)
      for exe in "$build"/tests/gpuos_gpu_*; do
        [ -f "$exe" ] && [ -x "$exe" ] || continue
        name=$(basename "$exe")
        # Suites whose every case loses the context (a hung or faulted runtime): each case in a process of
        # its own. The step is named by the case's name after its "suite: " prefix. (The loop reads a process
        # substitution, not a pipe: a pipe's subshell would lose a failed step's status.)
        case $name in
          gpuos_gpu_watchdog | gpuos_gpu_faults)
            while IFS= read -r tc; do
              [ -n "$tc" ] || continue
              short=${tc#*: }
              step "${name}: ${short:0:40}" "$logs/$name.$(echo "$short" | tr -c 'a-zA-Z0-9' _ | cut -c1-60).log" "$exe" "-tc=$tc"
            done < <("$exe" --list-test-cases --no-version 2>/dev/null | grep -v '^\[doctest\]' | grep -v '^=*$')
            continue ;;
        esac
        for ((i = 1; i <= repeat; ++i)); do
          step "$name#$i" "$logs/$name.$i.log" "$exe"
          [ $? -ne 0 ] || [ "$i" -gt 1 ] || grep -h "test cases:" "$logs/$name.$i.log" | tail -n 1 >>"$summary"
          # Graph suites again with every launch unplaced (GPUOS_GRAPH_PLACED=0): both paths stay tested.
          case $name in
            gpuos_gpu_graphs | gpuos_gpu_graph_fault)
              step "$name-unplaced#$i" "$logs/$name-unplaced.$i.log" env GPUOS_GRAPH_PLACED=0 "$exe" ;;
          esac
        done
      done ;;
    sanitize)
      # Every GPU suite under compute-sanitizer, one tool at a time; a suite passes when the sanitizer
      # reports nothing (--error-exitcode) and the suite's own checks pass. Left out: the suites that fault
      # or end the kernel on purpose (the sanitizer reports the fault they cause) and the soak; stream
      # unless SANITIZE_SUITES names it: under the tools a stop of the kernel does not return from the
      # tool's cuStreamQuery while a stream waits for a task (docs/design.md, Known limits).
      san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      [ -z "${SANITIZE_SUITES:-}" ] &&
        echo "sanitize: gpuos_gpu_stream not run under the tools (it hangs there: docs/design.md, Known limits)" | tee -a "$summary"
      for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
        for exe in "$build"/tests/gpuos_gpu_*; do
          [ -f "$exe" ] && [ -x "$exe" ] || continue
          name=$(basename "$exe")
          case $name in gpuos_gpu_fault | gpuos_gpu_graph_fault | gpuos_gpu_faults | gpuos_gpu_watchdog | gpuos_gpu_soak) continue ;; esac
          if [ -n "${SANITIZE_SUITES:-}" ]; then
            case " $SANITIZE_SUITES " in *" ${name#gpuos_gpu_} "*) ;; *) continue ;; esac
          elif [ "$name" = gpuos_gpu_stream ]; then
            continue
          fi
          # shellcheck disable=SC2086  # SANITIZE_ARGS: doctest filters, split on purpose
          step "$tool $name" "$logs/$tool.$name.log" env GPUOS_TEST_SCALE="${SANITIZE_SCALE:-100}" GPUOS_DEADLINE_SCALE="${SANITIZE_SCALE:-100}" \
            GPUOS_SM_BUDGET="${SANITIZE_SMS:-8}" \
            "$san" --tool "$tool" --error-exitcode 9 --print-limit 50 "$exe" ${SANITIZE_ARGS:-}
          grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|test cases:" "$logs/$tool.$name.log" | tail -n 2 | sed 's/^/    /' >>"$summary"
        done
      done ;;
    run) step "gpuos run --ops-dir" "$logs/gpuos_run.log" "$build/tools/gpuos" run --ops-dir examples/ops ;;
    dispatch|throughput|graph|sharing|large|hotpatch|alloc|module)
      extra_var=BENCH_ARGS_$part
      # shellcheck disable=SC2086  # word splitting of the extra arguments is intended
      step "bench_$part" "$logs/bench_$part.log" "$build/bench/bench_$part" --json "$logs/bench_$part.json" ${!extra_var:-}
      # A benchmark's verdicts: one TARGET line per target, CHECK lines, the RESULT line.
      grep -E "^(TARGET|CHECK|RESULT)" "$logs/bench_$part.log" | sed 's/^/    /' >>"$summary" ;;
    soak)
      soak_s=${SOAK_SECONDS:-1800}
      saved_limit=$limit
      limit=$((soak_s + 600))
      [ "$saved_limit" -gt "$limit" ] && limit=$saved_limit
      step "gpuos_gpu_soak ${soak_s} s" "$logs/gpuos_gpu_soak.full.log" \
        env GPUOS_SOAK_SECONDS="$soak_s" "$build/tests/gpuos_gpu_soak"
      limit=$saved_limit
      # The soak's last check line: counts, heap and memory.
      grep -h "MESSAGE: soak \(check\|end\)" "$logs/gpuos_gpu_soak.full.log" | tail -n 1 | sed 's/^.*MESSAGE: /    /' >>"$summary" ;;
    python|llama)
      py=${PYTHON:-python3}
      site=$out/site
      if [ ! -d "$site" ]; then
        if [ -z "${WHEEL:-}" ]; then
          echo "gpu_run: part $part needs WHEEL=path/to/gpuos-*.whl" | tee -a "$summary"
          status=1
          continue
        fi
        step "pip install the wheel" "$logs/pip_install.log" "$py" -m pip install -q --no-deps --target "$site" "$WHEEL" ||
          continue
      fi
      if [ "$part" = python ]; then
        # From the tests' folders, so that `import gpuos` is the installed package (as scripts/test.sh).
        step "pytest python/tests" "$logs/pytest_python.log" \
          bash -c "cd python/tests && PYTHONPATH='$site' '$py' -m pytest -q -rs -p no:cacheprovider ."
        step "pytest examples/llama" "$logs/pytest_llama.log" \
          bash -c "cd examples/llama/tests && PYTHONPATH='$site' '$py' -m pytest -q -rs -p no:cacheprovider ."
      else
        step "llama serve_check (tiny)" "$logs/llama_serve_check.log" \
          bash -c "export PYTHONPATH='$site':examples/llama && '$py' examples/llama/make_weights.py '$out/tiny' --preset tiny &&
                   '$py' examples/llama/serve_check.py '$out/tiny' --json '$logs/llama_serve_check.json'"
      fi ;;
    *) echo "gpu_run: unknown part '$part'" | tee -a "$summary"; status=1 ;;
  esac
done
tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$logs"
exit $status
