#!/usr/bin/env bash
# Sets up, builds and runs `gpuos run --ops-dir examples/ops`: the default workload through the built-in
# operators, then the example operators of examples/ops, compiled at run time, checked against the CPU.
# Extra arguments go to `gpuos run` (see build/tools/gpuos run --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec build/tools/gpuos run --ops-dir examples/ops "$@"
