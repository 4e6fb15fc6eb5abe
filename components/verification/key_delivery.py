"""The one API key a verification or load-test pod sends: its own Pod Identity role and a Secrets Store CSI
class holding exactly that key, so neither workload can read the gateway's other clients' keys."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs
from inference_platform.components.secrets.delivery import SecretDelivery, SecretDeliveryArgs
from inference_platform.components.verification import pods


def deliver_one_key(
    parent: pulumi.Resource,
    name: str,
    *,
    k8s_provider: pulumi.ProviderResource,
    cluster_name: pulumi.Input[str],
    namespace: str,
    service_account: str,
    partition: str,
    secret_arn: pulumi.Input[str],
    kms_key_arn: pulumi.Input[str],
    region: str,
    description: str,
    depends_on: Sequence[pulumi.Resource] = (),
) -> tuple[PodIdentityRole, SecretDelivery]:
    """Children ``<name>-identity`` and ``<name>-secrets`` of ``parent`` (names are the URNs: keep them)."""
    identity = PodIdentityRole(
        f"{name}-identity",
        PodIdentityRoleArgs(
            cluster_name=cluster_name,
            namespace=namespace,
            service_account=service_account,
            partition=partition,
            description=description,
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    delivery = SecretDelivery(
        f"{name}-secrets",
        SecretDeliveryArgs(
            k8s_provider=k8s_provider,
            namespace=namespace,
            service_account=service_account,
            role_name=identity.role_name,
            files={pods.API_KEY_FILE: secret_arn},
            kms_key_arn=kms_key_arn,
            region=region,
        ),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on)),
    )
    return identity, delivery
