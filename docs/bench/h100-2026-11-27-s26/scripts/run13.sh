#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
[ -d /tmp/site_ig5 ] || python3 -m pip install -q --no-deps --target /tmp/site_ig5 $P/ig5/*.whl >> "$o/pip.log" 2>&1
PYTHONPATH=/tmp/site_ig5 timeout 200 python3 -m pytest -q python/tests > "$o/pytest_py.log" 2>&1; echo "python rc $? $(tail -1 "$o/pytest_py.log")"
grep -E "FAILED|Error" "$o/pytest_py.log" | head
