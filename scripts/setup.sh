#!/usr/bin/env bash
# Installs what gpuos needs to build (Meson >= 1.11, ninja, doctest) and configures + builds ./build.
# Needs the CUDA Toolkit (13.x) installed; nvcc on PATH or under /usr/local/cuda.
# Usage: scripts/setup.sh [extra meson setup options]
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }

export PATH="$PATH:/usr/local/cuda/bin:$HOME/.local/bin"
command -v nvcc >/dev/null || { say "nvcc not found: install the CUDA Toolkit 13.x"; exit 1; }

meson_ok() {
  command -v meson >/dev/null &&
    python3 - "$(meson --version)" <<'PY'
import sys
v = tuple(int(x) for x in sys.argv[1].split('.')[:2])
sys.exit(0 if v >= (1, 11) else 1)
PY
}
if ! meson_ok; then
  say "installing meson >= 1.11 from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check 'meson>=1.11' ||
    python3 -m pip install --quiet --user --disable-pip-version-check 'meson>=1.11'
  hash -r
  meson_ok || { say "meson >= 1.11 is not available"; exit 1; }
fi

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    say "please install: $* (needs root)"; exit 1
  fi
}
command -v ninja >/dev/null || { say "installing ninja"; apt_install ninja-build; }
if ! [ -f /usr/include/doctest/doctest.h ] && ! [ -f /usr/local/include/doctest/doctest.h ]; then
  say "installing doctest"; apt_install doctest-dev
fi

# The Python package's tests run in a virtual environment (scripts/test.sh).
python3 -c 'import ensurepip' 2>/dev/null || { say "installing python3-venv"; apt_install python3-venv; }

if [ -f build/build.ninja ]; then
  meson setup --reconfigure build "$@" >/dev/null
else
  meson setup build "$@" >/dev/null
fi
say "building"
ninja -C build >/dev/null || ninja -C build
say "built in ./build"
