"""helm-charts-pinned (issue 18 §3): Helm through helm.v3.Release and helm.v4.Chart installs a repository
chart at one exact version; local paths, archives, unpinned or ranged versions and helm.v3.Chart fail."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.edge.gateway import controller_values
from inference_platform.components.observability.monitoring_stack import GRAFANA_SERVICE_ACCOUNT, grafana_values

RULE = "helm-charts-pinned"
REPO = {"repo": "https://kedacore.github.io/charts"}


def _install(kind, **source):
    def program():
        if kind == "v3":
            k8s.helm.v3.Release("chart", **source)
        else:
            k8s.helm.v4.Chart("chart", **source)

    return program


@pytest.mark.parametrize("kind", ["v3", "v4"])
@pytest.mark.parametrize(
    "source",
    [{"chart": "keda", "version": "2.20.2", "repository_opts": REPO},
     {"chart": "oci://public.ecr.aws/karpenter/karpenter", "version": "1.14.1"},
     {"chart": "gateway-helm", "version": "v1.9.0", "repository_opts": {"repo": "oci://docker.io/envoyproxy"}}],
    ids=["https-repo", "oci-reference", "oci-repo"],
)  # fmt: skip
def test_repository_charts_at_exact_versions_pass(violations, kind, source):
    assert violations(_install(kind, **source), RULE) == []


@pytest.mark.parametrize("kind", ["v3", "v4"])
@pytest.mark.parametrize(
    ("source", "words"),
    [({"chart": "./charts/tool"}, "installs a local path (./charts/tool)"),
     ({"chart": "/opt/charts/tool", "version": "1.0.0"}, "installs a local path"),
     ({"chart": "tool-1.0.0.tgz"}, "installs the archive tool-1.0.0.tgz"),
     ({"chart": "https://example.com/tool-1.0.0.tgz"}, "installs the archive"),
     ({"chart": "tool", "version": "1.0.0", "repository_opts": {"repo": "file:///srv/charts"}}, "installs a local path"),
     ({"chart": "tool", "version": "1.0.0", "repository_opts": {"repo": "http://charts.example.com"}},
      "is not an https:// or oci:// repository"),
     ({"chart": "stable/tool", "version": "1.0.0"}, "has no repositoryOpts.repo"),
     ({"chart": "keda", "repository_opts": REPO}, "version is unset"),
     ({"chart": "keda", "version": "^2.20", "repository_opts": REPO}, "is a range"),
     ({"chart": "keda", "version": ">=2.0.0", "repository_opts": REPO}, "is a range"),
     ({"chart": "keda", "version": "2.x", "repository_opts": REPO}, "is a range")],
)  # fmt: skip
def test_local_archived_or_unpinned_charts_fail(violations, kind, source, words):
    found = violations(_install(kind, **source), RULE)
    assert found and any(words in v.message for v in found), [v.message for v in found]


def test_a_v3_chart_cannot_be_judged_and_fails(violations):
    from inference_platform.offline_plan.policy_runner import evaluate
    from inference_platform.offline_plan.recorder import RecordedResource
    from tests.policies.conftest import BY_NAME

    # helm.v3.Chart renders client-side (a helm template invoke the plan's mocks do not serve): what the
    # engine shows the pack is a component with no inputs, recorded here as such.
    chart = RecordedResource(urn="urn:pulumi:test::test::kubernetes:helm.sh/v3:Chart::tool", type="kubernetes:helm.sh/v3:Chart",
                             name="tool", parent=None, custom=False, inputs={})  # fmt: skip
    (found,) = evaluate([chart], [BY_NAME[RULE]])
    assert "helm.v3.Chart registers no inputs" in found.message


# The rules that read a release's chart and values judge a helm.v4.Chart alike.


def test_a_v4_chart_installs_crds_and_orders_custom_resources(violations):
    def program(ordered):
        keda = k8s.helm.v4.Chart("keda", chart="keda", version="2.20.2", repository_opts=REPO, namespace="keda")
        k8s.apiextensions.CustomResource(
            "scaled", api_version="keda.sh/v1alpha1", kind="ScaledObject",
            metadata={"name": "scaled", "namespace": "inference"}, spec={"scaleTargetRef": {"name": "triton"}},
            opts=pulumi.ResourceOptions(depends_on=[keda]) if ordered else None,
        )  # fmt: skip

    assert violations(lambda: program(True), "custom-resources-after-crds") == []
    (found,) = violations(lambda: program(False), "custom-resources-after-crds")
    assert found.urn.endswith("::scaled") and "keda 2.20.2" in found.message


def test_a_v4_chart_with_grafanas_default_admin_fails(violations):
    def program(grafana):
        k8s.helm.v4.Chart("kps", chart="kube-prometheus-stack", version="88.5.3", namespace="monitoring",
                          repository_opts={"repo": "https://prometheus-community.github.io/helm-charts"},
                          values={"grafana": grafana})  # fmt: skip

    good = grafana_values({"node-role": "system"}, f"{GRAFANA_SERVICE_ACCOUNT}-secrets")
    assert violations(lambda: program(good), "grafana-no-default-admin") == []
    assert any("chart's default" in v.message for v in violations(lambda: program({}), "grafana-no-default-admin"))


def test_a_v4_envoy_gateway_chart_missing_the_redis_certs_volume_fails(violations):
    def program(values):
        k8s.helm.v4.Chart("gateway", chart="oci://docker.io/envoyproxy/gateway-helm", version="v1.9.0", values=values)

    bare = {"config": {"envoyGateway": {"rateLimit": {"backend": {"type": "Redis", "redis": {"url": "r", "tls": {}}}}}}}
    (found,) = violations(lambda: program(bare), "rate-limit-service-startable")
    assert "redis-certs" in found.message
    assert violations(lambda: program(controller_values("r:6379", tls=True)), "rate-limit-service-startable") == []
