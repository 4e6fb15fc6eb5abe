"""The node provisioner's metrics monitor: one table (release -> metrics port) makes the Karpenter or
Cluster Autoscaler ServiceMonitor, whichever the stack installs, with the names and ports the charts
give their Services (URNs unchanged: tests/infra/test_urns.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from inference_platform.infra.observability import KUBE_SYSTEM, PROVISIONER_METRICS_PORTS, _monitors


@pytest.mark.parametrize(
    ("karpenter", "autoscaler", "expected"),
    [
        (True, False, [("karpenter", "http-metrics")]),
        (False, True, [("cluster-autoscaler", "http")]),
        (False, False, []),
    ],
)
def test_the_installed_provisioner_gets_its_service_monitor(karpenter, autoscaler, expected):
    compute = SimpleNamespace(pools={}, karpenter=object() if karpenter else None,
                              autoscaler=object() if autoscaler else None)  # fmt: skip
    monitors = _monitors(compute)
    assert [(m.name, m.port) for m in monitors] == expected
    for monitor in monitors:
        assert monitor.kind == "ServiceMonitor" and monitor.namespace == KUBE_SYSTEM
        assert monitor.match_labels == {"app.kubernetes.io/instance": monitor.name}
        assert PROVISIONER_METRICS_PORTS[monitor.name] == monitor.port
