"""The Secrets Store CSI driver and its AWS provider: pods read Secrets Manager values as files.

Values go from Secrets Manager straight into a tmpfs in the pod. The provider authenticates as the
pod's own service account through EKS Pod Identity, so each pod reads only what its role allows.

Syncing into Kubernetes Secret objects (``secretObjects``) is on, because Envoy Gateway reads its API
keys (``SecurityPolicy.apiKeyAuth.credentialRefs``) and its rate-limit pods the Redis AUTH token only
from Kubernetes Secrets. In chart 1.6.0 ``syncSecret.enabled`` is the only switch for the RBAC that
lets the driver write Secrets (``templates/role-syncsecret.yaml``, ``role-syncsecret_binding.yaml``);
without it the driver logs ``SyncSecretForbiddenWarning`` and the Secret never appears, so Envoy Gateway
answers every route with a 500 (tests/components/secrets/test_secrets_store_csi_upstream.py pins both).

What that costs, and why it is acceptable:

- Synced values sit in etcd: only the Secrets a SecretProviderClass lists under ``secretObjects``, i.e.
  the edge's client API keys and the Redis AUTH token in the gateway's namespace (no model-store or
  serving secret is synced). EKS encrypts Secrets in etcd with the cluster's KMS key (envelope
  encryption, inference_platform.components.cluster), and the Secret lives only while a pod mounts the class (the driver
  owns it through the pod's SecretProviderClassPodStatus, so it is garbage-collected with it).
- The chart's sync RBAC is cluster-wide: a ClusterRole ``secretprovidersyncing-role`` (create, delete,
  get, list, patch, update, watch on every Secret) bound by a ClusterRoleBinding to the driver's service
  account. A namespaced Role would not do: the driver watches the Secrets it manages through a
  cluster-wide informer. So the driver DaemonSet (kube-system, one pod per node) can read and write any
  Secret in the cluster; it already is a privileged, node-level component that sees every mounted value,
  and no other workload gains anything. The plan refuses a ``secretObjects`` class without this release
  (policies/rules/secret_sync.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.catalog.charts import Chart
from inference_platform.catalog.storage_charts import SECRETS_STORE_CSI_DRIVER, SECRETS_STORE_PROVIDER_AWS
from inference_platform.components.common.errors import raise_if

DRIVER_NAMESPACE = "kube-system"
DEFAULT_ROTATION_POLL_INTERVAL = "2m"
# The token audience EKS Pod Identity accepts; the driver hands such a token to the provider.
POD_IDENTITY_AUDIENCE = "pods.eks.amazonaws.com"
# Secrets must mount on every node, GPU and Neuron nodes included (they are tainted).
TOLERATE_EVERYTHING = [{"operator": "Exists"}]


@dataclass(frozen=True, kw_only=True)
class SecretsStoreCsiArgs:
    """What the Secrets Store CSI driver needs: the cluster's provider and the two pinned charts."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    region: str
    """Required. Region of the secrets (saves the provider a node-label lookup per mount)."""
    rotation_poll_interval: str = DEFAULT_ROTATION_POLL_INTERVAL
    """Default ``2m``. How often mounted values are refreshed, so rotated keys reach running pods."""
    driver_chart: Chart = SECRETS_STORE_CSI_DRIVER
    """Default: secrets-store-csi-driver 1.6.0."""
    provider_chart: Chart = SECRETS_STORE_PROVIDER_AWS
    """Default: secrets-store-csi-driver-provider-aws 3.1.1."""


class SecretsStoreCsi(pulumi.ComponentResource):
    """The Secrets Store CSI driver and its AWS provider: pods read Secrets Manager values as files."""

    driver_release_name: str
    provider_release_name: str

    def __init__(self, name: str, args: SecretsStoreCsiArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:secrets:SecretsStoreCsi", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)
        self.driver_release_name = "secrets-store-csi-driver"
        self.provider_release_name = "secrets-store-csi-driver-provider-aws"
        driver = _release(
            f"{name}-driver",
            self.driver_release_name,
            args.driver_chart,
            {
                # Envoy Gateway reads Kubernetes Secrets only: see the module docstring for the cost.
                "syncSecret": {"enabled": True},
                "enableSecretRotation": True,
                "rotationPollInterval": args.rotation_poll_interval,
                "tokenRequests": [{"audience": POD_IDENTITY_AUDIENCE}],
                "linux": {"tolerations": TOLERATE_EVERYTHING},
            },
            k8s_opts,
        )
        _release(
            f"{name}-provider-aws",
            self.provider_release_name,
            args.provider_chart,
            {
                # The bundled driver dependency floats (^1): the pinned driver above is the only one.
                "secrets-store-csi-driver": {"install": False},
                "awsRegion": args.region,
                "tolerations": TOLERATE_EVERYTHING,
            },
            pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[driver])),
        )
        self.register_outputs(
            {"driver_release_name": self.driver_release_name, "provider_release_name": self.provider_release_name}
        )


def _release(
    resource_name: str, release_name: str, chart: Chart, values: dict[str, Any], opts: pulumi.ResourceOptions
) -> k8s.helm.v3.Release:
    return k8s.helm.v3.Release(
        resource_name,
        name=release_name,
        **chart.release_source(),
        namespace=DRIVER_NAMESPACE,
        values=values,
        opts=opts,
    )


def _validate(args: SecretsStoreCsiArgs) -> None:
    problems = []
    interval = args.rotation_poll_interval
    if not (len(interval) >= 2 and interval[:-1].isdigit() and interval[-1] in "smh" and int(interval[:-1]) > 0):
        problems.append(f"rotation_poll_interval={interval!r}: a positive Go duration such as '2m'")
    if not args.region:
        problems.append("region is required")
    raise_if("SecretsStoreCsi", problems)
