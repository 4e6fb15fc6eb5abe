"""API keys of the gateway's clients: one generated key per client id in Secrets Manager, delivered to the
Kubernetes Secret Envoy Gateway's ``SecurityPolicy.apiKeyAuth`` reads (data key = client id, value = key).

Delivery is the Secrets Store CSI driver's sync (``secretObjects``): the driver writes the Secret while a
pod mounts the SecretProviderClass, so a one-replica ``credentials-sync`` Deployment (the pause image, no
privileges) keeps the mount and with it the Secret; its service account alone may read these secrets
(Pod Identity). No key appears in a manifest, and in state only as a Pulumi secret (encrypted).
Rotation: replace a client's key in Secrets Manager; the driver's rotation poll updates the Secret.

The driver syncs asynchronously (its SecretProviderClassPodStatus controller, after the CSI mount has
succeeded), so a mount alone says nothing about the Secret: without the driver's sync RBAC the pod would
run while Envoy Gateway answers every route with a 500. The sync pod therefore also mounts each synced
Secret as an ordinary (non-optional) ``secret`` volume: the kubelet keeps the pod in ContainerCreating
until every synced Secret exists, so the Deployment is not Ready and ``pulumi up`` waits for it and fails
at its await timeout instead of finishing green. The kubelet reads those Secrets with its own node
credentials; the pod still has no service-account token, and the pause image reads nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.components.common.errors import raise_if
from inference_platform.components.common.security_context import (
    NOBODY_UID,
    container_security_context,
    pod_security_context,
)
from inference_platform.components.edge.controller_config import REDIS_AUTH_KEY, REDIS_AUTH_SECRET
from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs
from inference_platform.components.secrets.delivery import CSI_DRIVER_NAME, provider_objects
from inference_platform.components.secrets.generated import generated_secret
from inference_platform.components.storage.documents import secret_read_policy

SERVICE_ACCOUNT = "edge-credentials"
_REDIS_AUTH_OBJECT = "redis-auth"
# The Kubernetes pause image (3.10), by digest: it only holds the CSI mount.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"
MIN_KEY_LENGTH = 32
SYNC_LABELS = {"app.kubernetes.io/name": "credentials-sync", "app.kubernetes.io/part-of": "inference-edge"}


@dataclass(frozen=True, kw_only=True)
class ClientCredentialsArgs:
    """What the client credentials need: the cluster's provider, the namespace and Secret, the clients and their key."""

    provider: k8s.Provider
    """Required. The cluster's Kubernetes provider."""
    cluster: pulumi.Input[str]
    """Required. The cluster resource's name output (Pod Identity association)."""
    namespace: str
    """Required. Where the gateway's SecurityPolicy lives (Envoy Gateway's namespace)."""
    secret_name: str
    """Required. The Kubernetes Secret the SecurityPolicy references."""
    clients: Sequence[str]
    """Required, not empty. Client ids (lower-case DNS labels)."""
    name_prefix: str
    """Required. Secrets are ``<name_prefix>/edge/clients/<id>``."""
    kms_key_arn: pulumi.Input[str]
    """Required. The key encrypting the secrets."""
    region: str
    """Required."""
    key_length: int = 48
    """Default 48, >= 32."""
    recovery_window_days: int = 30
    """Default 30 (7-30)."""
    partition: str = "aws"
    """Default ``aws``."""
    protect: bool = False
    """Default ``False``; production protects and retains the secrets."""
    redis_auth_secret_arn: pulumi.Input[str] | None = None
    """Default none. The rate-limit Redis AUTH token's secret: also synced, into the Secret
    ``ratelimit-redis-auth`` (key ``token``) that Envoy Gateway's rate-limit pods read."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Default none. What must exist first (the namespace, the CSI driver)."""


class ClientCredentials(pulumi.ComponentResource):
    """The gateway clients' API keys: one generated key per client in Secrets Manager, synced to the gateway as a
    Secret."""

    secret_arns: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: ClientCredentialsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:edge:ClientCredentials", name, None, opts)
        self.secret_arns = {}
        for client in sorted(args.clients):
            stored = generated_secret(
                self,
                value_name=f"{name}-{client}-key",
                secret_name=f"{name}-{client}",
                name=f"{args.name_prefix}/edge/clients/{client}",
                description=f"API key of inference client {client}",
                length=args.key_length,
                kms_key_arn=args.kms_key_arn,
                recovery_window_days=args.recovery_window_days,
                protect=args.protect,
            )
            self.secret_arns[client] = stored.secret.arn
        objects: dict[str, pulumi.Input[str]] = {c: self.secret_arns[c] for c in sorted(args.clients)}
        if args.redis_auth_secret_arn is not None:
            objects[_REDIS_AUTH_OBJECT] = args.redis_auth_secret_arn
        arns = pulumi.Output.all(*objects.values())
        identity = PodIdentityRole(
            f"{name}-reader",
            PodIdentityRoleArgs(
                cluster_name=args.cluster,
                namespace=args.namespace,
                service_account=SERVICE_ACCOUNT,
                partition=args.partition,
                inline_policy=pulumi.Output.all(arns, args.kms_key_arn).apply(
                    lambda v: json.dumps(secret_read_policy(v[0], v[1], args.region))
                ),
                description="Reads the gateway's client API keys for the CSI driver",
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on))
        account = k8s.core.v1.ServiceAccount(
            f"{name}-service-account",
            metadata={"name": SERVICE_ACCOUNT, "namespace": args.namespace},
            automount_service_account_token=False,
            opts=k8s_opts,
        )
        provider_class = k8s.apiextensions.CustomResource(
            f"{name}-provider-class",
            api_version="secrets-store.csi.x-k8s.io/v1",
            kind="SecretProviderClass",
            metadata={"name": args.secret_name, "namespace": args.namespace},
            spec=arns.apply(lambda values: provider_class_spec(args, dict(zip(objects, values, strict=True)))),
            opts=k8s_opts,
        )
        # The sync pod talks to nobody: the CSI driver on its node fetches the secrets.
        k8s.networking.v1.NetworkPolicy(
            f"{name}-sync-network-policy",
            metadata={"name": "credentials-sync", "namespace": args.namespace},
            spec={"podSelector": {"matchLabels": SYNC_LABELS}, "policyTypes": ["Ingress", "Egress"]},
            opts=k8s_opts,
        )
        k8s.apps.v1.Deployment(
            f"{name}-sync",
            metadata={"name": "credentials-sync", "namespace": args.namespace},
            spec=sync_deployment_spec(
                args.secret_name,
                synced_secret_names(args.secret_name, redis_auth=args.redis_auth_secret_arn is not None),
            ),
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=[identity, account, provider_class]
            ),
        )
        self.register_outputs({"secret_arns": self.secret_arns})


def synced_secret_names(secret_name: str, *, redis_auth: bool) -> list[str]:
    """The Kubernetes Secrets the class's ``secretObjects`` write (what the sync pod waits for)."""
    return [secret_name, *([REDIS_AUTH_SECRET] if redis_auth else [])]


def provider_class_spec(args: ClientCredentialsArgs, arns: dict[str, str]) -> dict[str, Any]:
    """Mount each client's secret as a file named after the client; sync them into one Opaque Secret
    (and the Redis AUTH token, when given, into its own)."""
    clients = sorted(c for c in arns if c != _REDIS_AUTH_OBJECT)
    secret_objects = [
        {
            "secretName": args.secret_name,
            "type": "Opaque",
            "data": [{"objectName": client, "key": client} for client in clients],
        }
    ]
    if _REDIS_AUTH_OBJECT in arns:
        secret_objects.append(
            {
                "secretName": REDIS_AUTH_SECRET,
                "type": "Opaque",
                "data": [{"objectName": _REDIS_AUTH_OBJECT, "key": REDIS_AUTH_KEY}],
            }
        )
    return {
        "provider": "aws",
        "parameters": {"objects": provider_objects(arns), "usePodIdentity": "true", "region": args.region},
        "secretObjects": secret_objects,
    }


def sync_deployment_spec(provider_class: str, synced_secrets: Sequence[str] = ()) -> dict[str, Any]:
    """One pause container holding the CSI mount; each of ``synced_secrets`` is mounted too, so the pod
    starts (and the Deployment becomes Ready) only once the driver has written them."""
    labels = dict(SYNC_LABELS)
    synced = [(f"synced-{i}", name) for i, name in enumerate(synced_secrets)]
    return {
        "replicas": 1,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "serviceAccountName": SERVICE_ACCOUNT,
                "automountServiceAccountToken": False,
                "nodeSelector": {"node-role": "system"},
                "securityContext": pod_security_context(NOBODY_UID, group=True),
                "containers": [
                    {
                        "name": "pause",
                        "image": PAUSE_IMAGE,
                        "resources": {
                            "requests": {"cpu": "5m", "memory": "16Mi"},
                            "limits": {"cpu": "50m", "memory": "16Mi"},
                        },
                        "securityContext": container_security_context(),
                        "volumeMounts": [
                            {"name": "keys", "mountPath": "/mnt/keys", "readOnly": True},
                            *(
                                {"name": volume, "mountPath": f"/mnt/synced/{name}", "readOnly": True}
                                for volume, name in synced
                            ),
                        ],
                    }
                ],
                "volumes": [
                    {
                        "name": "keys",
                        "csi": {
                            "driver": CSI_DRIVER_NAME,
                            "readOnly": True,
                            "volumeAttributes": {"secretProviderClass": provider_class},
                        },
                    },
                    # Not optional: the kubelet retries the mount until the driver has synced the Secret.
                    *({"name": volume, "secret": {"secretName": name, "optional": False}} for volume, name in synced),
                ],
            },
        },
    }


def _validate(args: ClientCredentialsArgs) -> None:
    problems = []
    if not args.clients:
        problems.append("clients: at least one client id")
    if args.key_length < MIN_KEY_LENGTH:
        problems.append(f"key_length: {args.key_length} < {MIN_KEY_LENGTH}")
    if not 7 <= args.recovery_window_days <= 30:
        problems.append(f"recovery_window_days: {args.recovery_window_days} outside 7-30")
    raise_if("ClientCredentials", problems)
