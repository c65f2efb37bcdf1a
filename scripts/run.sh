#!/usr/bin/env bash
# Sets up, builds and runs `gpuos run` (the default workload through the built-in operators).
# Extra arguments go to `gpuos run` (see build/tools/gpuos run --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec build/tools/gpuos run "$@"
