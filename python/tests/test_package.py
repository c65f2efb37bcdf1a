"""The package without a GPU: import, errors, argument validation, task encoding."""

import struct

import pytest

import gpuos


def test_import_and_build_info():
    info = gpuos.build_info()
    assert "CUDA" in info and "sm_" in info
    assert gpuos.MAX_ARG_BYTES == 88
    assert issubclass(gpuos.Error, RuntimeError)
    assert gpuos.status_name(0) == "GPUOS_OK"
    assert gpuos.status_name(5) == "GPUOS_ERR_NO_DEVICE"


def test_creating_a_runtime_without_a_device_is_a_clear_error(no_gpu):
    with pytest.raises(gpuos.Error) as e:
        gpuos.Runtime()
    assert e.value.status == "GPUOS_ERR_NO_DEVICE"
    assert e.value.code == 5
    assert "GPUOS_ERR_NO_DEVICE" in str(e.value)
    with pytest.raises(gpuos.Error) as q:
        gpuos.query_device(device=0)
    assert q.value.status == "GPUOS_ERR_NO_DEVICE"


def test_options_are_checked():
    with pytest.raises(TypeError, match="unknown option 'sm_budgett'"):
        gpuos.Runtime(sm_budgett=4)
    with pytest.raises(TypeError, match="option queue_capacity takes an int >= 0, got 'many'"):
        gpuos.Runtime(queue_capacity="many")
    with pytest.raises(TypeError, match="option sm_budget"):
        gpuos.Runtime(sm_budget=-1)
    with pytest.raises(gpuos.Error, match="slice_us must be 0 \\(never\\) or in \\[100, 10000000\\]") as e:
        gpuos.Runtime(slice_us=50)
    assert e.value.status == "GPUOS_ERR_INVALID_ARG"
    with pytest.raises(gpuos.Error, match="park_us must be 0"):
        gpuos.Runtime(park_us=20_000_000)
    with pytest.raises(TypeError, match="option park_us takes an int >= 0"):
        gpuos.Runtime(park_us=-1)
    with pytest.raises(TypeError, match="option device takes an int"):
        gpuos.query_device(device=1.5)
    with pytest.raises(gpuos.Error, match="deadline_ms must be 0 \\(no watchdog\\) or at least 10"):
        gpuos.Runtime(deadline_ms=5)
    with pytest.raises(gpuos.Error, match="stage_bytes must be a multiple of 16, got 1000") as st:
        gpuos.Runtime(stage_bytes=1000)
    assert st.value.status == "GPUOS_ERR_INVALID_ARG"
    with pytest.raises(TypeError, match="option stage_bytes takes an int >= 0"):
        gpuos.query_device(stage_bytes=-16)


def test_task_arguments_are_checked():
    t = gpuos.Task(300, tiles=7, args=b"\x01\x02\x03")
    assert (t.op, t.tiles, t.args) == (300, 7, b"\x01\x02\x03")
    assert gpuos.Task(4).args == b""
    assert gpuos.Task(4).deadline_ms == 0
    assert gpuos.Task(4, deadline_ms=250).deadline_ms == 250
    with pytest.raises(ValueError, match="exceed GPUOS_MAX_ARG_BYTES"):
        gpuos.Task(300, args=bytes(89))
    gpuos.Task(300, args=bytes(88))
    with pytest.raises(ValueError, match="tiles"):
        gpuos.Task(300, tiles=0)


def test_builtin_tasks_encode_their_argument_structs():
    out, a, b = 0x7F0000001000, 0x7F0000002000, 0x7F0000003000
    t = gpuos.ops.add(out, a, b, n=5000)
    assert t.op == 3
    assert t.tiles == 2  # 4096 elements a tile
    assert t.args == struct.pack("<QQQQ", out, a, b, 5000)
    assert gpuos.ops.mul(out, a, b, n=1).op == 4
    f = gpuos.ops.fill(out, 2.5, n=10)
    assert (f.op, f.args) == (1, struct.pack("<QQfI", out, 10, 2.5, 0))
    y = gpuos.ops.axpy(out, -1.0, a, n=4096)
    assert (y.op, y.tiles, y.args) == (5, 1, struct.pack("<QQQfI", out, a, 4096, -1.0, 0))
    assert gpuos.ops.copy(out, a, n=3).args == struct.pack("<QQQ", out, a, 3)
    assert gpuos.ops.sum(out, a, n=3).op == 6
    assert gpuos.ops.nop().op == 0 and gpuos.ops.nop().args == b""


def test_builtin_tasks_refuse_what_is_not_device_memory():
    with pytest.raises(ValueError, match="n is required"):
        gpuos.ops.add(1, 2, 3)
    with pytest.raises(TypeError, match="CUDA array"):
        gpuos.ops.add([1.0], 2, 3, n=1)
    with pytest.raises(TypeError, match="CUDA array"):
        gpuos.ops.fill(bytearray(16), 1.0, n=4)


def test_graph_building_is_checked():
    g = gpuos.Graph()
    a = g.add(gpuos.ops.nop())
    b = g.add(gpuos.ops.nop(), after=[a])
    c = g.add(gpuos.ops.nop(), after=[a, b])
    assert (a, b, c) == (0, 1, 2)
    g.edge(b, c)
    with pytest.raises(gpuos.Error) as e:
        g.edge(0, 7)
    assert e.value.status == "GPUOS_ERR_INVALID_ARG" and "7" in str(e.value)
    with pytest.raises(gpuos.Error):
        g.edge(1, 1)
    with pytest.raises(gpuos.Error):
        g.add(gpuos.ops.nop(), after=[9])


def test_the_metrics_collector_parses_the_runtimes_text():
    pytest.importorskip("prometheus_client")
    from gpuos.metrics import RuntimeCollector

    class FakeRuntime:
        def metrics(self):
            return (
                "# HELP gpuos_tasks_completed_total Tasks completed.\n"
                "# TYPE gpuos_tasks_completed_total counter\n"
                "gpuos_tasks_completed_total 42\n"
                "# HELP gpuos_operator_tasks_failed_total Failed tasks of an operator.\n"
                "# TYPE gpuos_operator_tasks_failed_total counter\n"
                'gpuos_operator_tasks_failed_total{operator="add"} 3\n'
            )

    families = {f.name: f for f in RuntimeCollector(FakeRuntime()).collect()}
    assert families["gpuos_tasks_completed"].type == "counter"
    assert families["gpuos_tasks_completed"].samples[0].value == 42
    s = families["gpuos_operator_tasks_failed"].samples[0]
    assert s.labels == {"operator": "add"} and s.value == 3


def test_importing_gpuos_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, gpuos, gpuos.metrics; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
