"""The LeaderWorkerSet controller and the Prometheus Operator CRDs: pinned, installed only on demand."""

from __future__ import annotations

import pytest

from inference_platform.catalog import serving_charts
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.serving.controllers import ServingControllers, ServingControllersArgs
from tests.components.storage.test_fsx_csi import provider
from tests.conftest import by_type, one

RELEASE = "kubernetes:helm.sh/v3:Release"


def controllers(**flags):
    return lambda: ServingControllers("controllers", ServingControllersArgs(k8s_provider=provider(), **flags))


def test_the_leader_worker_set_controller_is_pinned_and_runs_on_system_nodes(run_components):
    release = one(run_components(controllers(leader_worker_set=True)).resources, "controllers-lws").inputs
    assert (release["chart"], release["version"]) == ("oci://registry.k8s.io/lws/charts/lws", "0.10.0")
    assert release["namespace"] == "lws-system" and release["createNamespace"] is True
    values = release["values"]
    # The chart's default image tag is `main` (pullPolicy Always): never what a plan should install.
    assert values["image"]["manager"] == {"tag": "v0.10.0", "pullPolicy": "IfNotPresent"}
    assert values["nodeSelector"] == {"node-role": "system"}
    assert f"v{serving_charts.LEADER_WORKER_SET.version}" == serving_charts.LEADER_WORKER_SET_IMAGE_TAG


def test_prometheus_crds_are_pinned_and_installed_alone(run_components):
    resources = run_components(controllers(prometheus_crds=True)).resources
    (release,) = by_type(resources, RELEASE)
    assert release.name == "controllers-prometheus-crds"
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["repositoryOpts"]["repo"]) == (
        "prometheus-operator-crds",
        "31.0.1",
        "https://prometheus-community.github.io/helm-charts",
    )
    assert release.inputs["namespace"] == "kube-system" and not release.inputs.get("createNamespace")


def test_every_release_uses_the_given_provider_and_is_parented(run_components):
    resources = run_components(controllers(leader_worker_set=True, prometheus_crds=True)).resources
    (k8s_provider,) = by_type(resources, "pulumi:providers:kubernetes")
    releases = by_type(resources, RELEASE)
    assert len(releases) == 2
    assert all(r.provider == k8s_provider.urn and "ServingControllers::controllers" in r.parent for r in releases)


def test_nothing_to_install_is_refused():
    with pytest.raises(ComponentArgsError, match="nothing to install"):
        controllers()()
