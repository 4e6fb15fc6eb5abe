"""The load-balancer controller's release on a fresh cluster (issue 17 §3).

Chart 3.5.0 (kubernetes-sigs/aws-load-balancer-controller helm/aws-load-balancer-controller/templates/webhook.yaml
and values.yaml at v3.5.0) registers ``mservice.elbv2.k8s.aws`` with failurePolicy Fail on every Service CREATE
unless ``enableServiceMutatorWebhook`` is false; until a controller pod is Ready no Service could be created
(aws-load-balancer-controller #4140). The edge needs only Ingresses, so the release switches it off.
"""

from __future__ import annotations

import pulumi_kubernetes as k8s

from inference_platform.catalog import edge_charts
from inference_platform.catalog.webhooks import FAILING_WEBHOOKS, holds
from inference_platform.components.edge.load_balancer_controller import LoadBalancerControllerArgs, release_values
from inference_platform.policies.props import get

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"


def _values() -> dict:
    args = LoadBalancerControllerArgs(
        cluster_name="demo",
        cluster="demo",
        region="us-west-2",
        account_id="123456789012",
        vpc_id="vpc-1",
        provider=k8s.Provider("k8s", kubeconfig=KUBECONFIG),
    )
    return release_values(args, "vpc-1")


def test_the_service_mutator_webhook_is_switched_off(run_components):
    holder: dict = {}
    run_components(lambda: holder.update(values=_values()))
    values = holder["values"]
    assert values["enableServiceMutatorWebhook"] is False
    # No cluster-wide Fail webhook of this chart survives these values.
    everywhere = [w for w in FAILING_WEBHOOKS if w.chart == edge_charts.LOAD_BALANCER_CONTROLLER and w.everywhere]
    assert everywhere, "the catalog lists the chart's Service webhook"
    for webhook in everywhere:
        assert not all(holds(get(values, p, d), want) for p, d, want in webhook.fails_when), webhook.name
