"""The edge's client credentials: the SecretProviderClass syncs the API keys (and the Redis AUTH token) into
Kubernetes Secrets, and the sync pod cannot start until each of them exists, so a driver that may not
write Secrets holds ``pulumi up`` on the Deployment's readiness instead of finishing green with an edge
that answers 500 (issue 17 §1)."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.edge.client_credentials import (
    REDIS_AUTH_SECRET,
    ClientCredentials,
    ClientCredentialsArgs,
    sync_deployment_spec,
    synced_secret_names,
)
from tests.conftest import by_type

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"
REDIS_AUTH_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:redis-auth"


@pytest.fixture
def recorded(run_components):
    def program():
        ClientCredentials(
            "creds",
            ClientCredentialsArgs(
                provider=k8s.Provider("k8s", kubeconfig=KUBECONFIG),
                cluster="demo",
                namespace="envoy-gateway-system",
                secret_name="inference-api-keys",
                clients=["chat", "batch"],
                name_prefix="demo",
                kms_key_arn="arn:aws:kms:us-east-1:123456789012:key/k",
                region="us-east-1",
                redis_auth_secret_arn=REDIS_AUTH_ARN,
            ),
        )

    return run_components(program).resources


def _pod(resources):
    (deployment,) = by_type(resources, "kubernetes:apps/v1:Deployment")
    return deployment.inputs["spec"]["template"]["spec"]


def test_the_sync_pod_mounts_every_synced_secret_so_it_waits_for_the_driver(recorded):
    (spc,) = by_type(recorded, "kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass")
    synced = [s["secretName"] for s in spc.inputs["spec"]["secretObjects"]]
    assert synced == ["inference-api-keys", REDIS_AUTH_SECRET]
    pod = _pod(recorded)
    secret_volumes = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
    # Every Secret the class syncs is a required volume of the pod: the kubelet keeps it ContainerCreating
    # (the Deployment not Ready, pulumi up waiting) until the driver has written it.
    assert sorted(v["secretName"] for v in secret_volumes.values()) == sorted(synced)
    assert all(v["optional"] is False for v in secret_volumes.values())
    mounted = {m["name"] for m in pod["containers"][0]["volumeMounts"]}
    assert set(secret_volumes) <= mounted and "keys" in mounted
    assert pod["automountServiceAccountToken"] is False


def test_without_the_redis_token_only_the_key_secret_is_awaited():
    names = synced_secret_names("inference-api-keys", redis_auth=False)
    assert names == ["inference-api-keys"]
    volumes = sync_deployment_spec("inference-api-keys", names)["template"]["spec"]["volumes"]
    assert [v["secret"]["secretName"] for v in volumes if "secret" in v] == ["inference-api-keys"]
    # The CSI volume that makes the driver sync stays first.
    assert volumes[0]["csi"]["volumeAttributes"] == {"secretProviderClass": "inference-api-keys"}
