"""Prometheus metrics of a runtime for `prometheus_client` (imported only here, only when used).

    from prometheus_client import REGISTRY, start_http_server
    from gpuos.metrics import RuntimeCollector
    REGISTRY.register(RuntimeCollector(rt))

The collector parses `Runtime.metrics()`, the text gpuos_metrics writes (exposition format 0.0.4), so
the C function, a scrape of that text and this collector report the same metrics.
"""


class RuntimeCollector:
    """A prometheus_client collector: each collect() reads the runtime's metrics once."""

    def __init__(self, runtime):
        self._runtime = runtime

    def collect(self):
        from prometheus_client.parser import text_string_to_metric_families

        yield from text_string_to_metric_families(self._runtime.metrics())

    def describe(self):
        # No fixed description: the operator labels change as operators are loaded.
        return []
