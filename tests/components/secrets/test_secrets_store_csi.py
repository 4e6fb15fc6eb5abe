"""Secrets Store CSI driver and AWS provider: pinned charts, sync to Kubernetes Secrets on (Envoy Gateway
reads only Secrets), Pod Identity token audience, rotation, every node, and the provider's floating
driver copy switched off."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.secrets.secrets_store_csi import SecretsStoreCsi, SecretsStoreCsiArgs
from tests.conftest import by_type, one

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"


@pytest.fixture
def releases(run_components):
    def program():
        SecretsStoreCsi(
            "ss", SecretsStoreCsiArgs(k8s_provider=k8s.Provider("k8s", kubeconfig=KUBECONFIG), region="us-east-1")
        )

    return run_components(program).resources


def test_both_charts_are_pinned_to_their_published_versions(releases):
    found = {
        (r.inputs["chart"], r.inputs["version"], r.inputs["repositoryOpts"]["repo"])
        for r in by_type(releases, "kubernetes:helm.sh/v3:Release")
    }
    assert found == {
        ("secrets-store-csi-driver", "1.6.0", "https://kubernetes-sigs.github.io/secrets-store-csi-driver/charts"),
        (
            "secrets-store-csi-driver-provider-aws",
            "3.1.1",
            "https://aws.github.io/secrets-store-csi-driver-provider-aws",
        ),
    }


def test_the_driver_may_sync_secret_objects_and_rotates_them(releases):
    values = one(releases, "ss-driver").inputs["values"]
    # The only switch for the chart's sync RBAC (tests/components/secrets/test_secrets_store_csi_upstream.py).
    assert values["syncSecret"] == {"enabled": True}
    assert values["enableSecretRotation"] is True and values["rotationPollInterval"] == "2m"
    assert values["tokenRequests"] == [{"audience": "pods.eks.amazonaws.com"}]
    assert values["linux"]["tolerations"] == [{"operator": "Exists"}]


def test_the_provider_uses_the_pinned_driver_only_and_runs_on_every_node(releases):
    provider = one(releases, "ss-provider-aws")
    values = provider.inputs["values"]
    assert values["secrets-store-csi-driver"] == {"install": False}
    assert values["awsRegion"] == "us-east-1" and values["tolerations"] == [{"operator": "Exists"}]
    assert one(releases, "ss-driver").urn in provider.dependencies
    assert all(r.inputs["namespace"] == "kube-system" for r in by_type(releases, "kubernetes:helm.sh/v3:Release"))


def test_bad_arguments_are_reported_together():
    with pytest.raises(ComponentArgsError) as err:
        SecretsStoreCsi("ss", SecretsStoreCsiArgs(k8s_provider=None, region="", rotation_poll_interval="soon"))
    assert "rotation_poll_interval='soon'" in str(err.value) and "region is required" in str(err.value)
