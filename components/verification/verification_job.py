"""The post-rollout verification Job: ``inferctl verify`` inside the cluster, awaited by ``pulumi up``.

- Runs after the rollout (``depends_on`` it: the Deployment is ready before the Job is created) and
  ``pulumi up`` waits for the Job to complete (pulumi-kubernetes awaits Jobs unless ``skipAwait``), so a
  rollout that misses its SLOs fails the deploy. ``customTimeouts.create`` covers the Job's own deadline
  plus its pod's scheduling and image pull; the rollout before it has its own await.
- Bounded: ``backoffLimit: 0`` (a failed verdict is an answer, not a flake to retry), ``activeDeadlineSeconds``,
  ``ttlSecondsAfterFinished``. The name carries a digest of what it verifies (image, settings, target), so
  every changed rollout gets a new Job and an unchanged one is not verified again; a failed one is replaced
  (``pulumi.com/replaceUnready``), so the next ``pulumi up`` verifies again rather than waiting on it.
- Least privilege for the key: its own service account whose Pod Identity role reads exactly one API key
  (one edge client's, or the in-pod key without an edge) through its own SecretProviderClass. Reusing the
  inference class would hand it every key of the rotation set, and the Triton role with them.
- Reads the serving pods (restarts, OOMKilled, ERROR lines) through a namespaced Role: get/list pods and
  pods/log only, so its token is mounted. With a gated canary the Role may also create core/v1 Events (no
  get, list or update): one per gate decision, on the Job itself (inferctl/verify/canary_events.py).
- Egress: DNS, TCP 443 (the edge's public ALB and the cluster's API), the serving port when it targets the
  Service in the cluster, Prometheus when it checks GPU utilisation. No ingress.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.components.common.errors import raise_if
from inference_platform.components.verification import pods
from inference_platform.components.verification.key_delivery import deliver_one_key
from inference_platform.components.verification.pods import PodShape

SERVICE_ACCOUNT = "verification"
REPLACE_UNREADY = "pulumi.com/replaceUnready"
SETTINGS_DIR = "/etc/verification"
SETTINGS_FILE = "settings.json"
DEFAULT_ACTIVE_DEADLINE_SECONDS = 1800
DEFAULT_TTL_SECONDS = 86400
# Scheduling and the image pull, before activeDeadlineSeconds runs out (the serving image is large).
START_ALLOWANCE_SECONDS = 600
LABELS = {"app.kubernetes.io/name": "verification", "app.kubernetes.io/part-of": "inference-platform"}


@dataclass(frozen=True, kw_only=True)
class InClusterTarget:
    """The Triton Service the Job targets when the stack has no edge."""

    pod_labels: Mapping[str, str]
    """The serving pods' labels (what an extra NetworkPolicy admits the Job to)."""
    port: int
    """Triton's HTTP port."""


@dataclass(frozen=True, kw_only=True)
class VerificationJobArgs:
    """What the verification Job needs: the cluster's provider, the image, the endpoint and one client's API key."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    cluster_name: pulumi.Input[str]
    """Required. The cluster resource's name (the Pod Identity association)."""
    namespace: str
    """Required. The serving namespace: the Job reads its pods and runs beside them."""
    stack: str
    """Required. The stack name ``inferctl verify --stack`` is given."""
    image: pulumi.Input[str]
    """Required. An image with ``inferctl`` and its load-test extras (the serving image, by digest)."""
    image_version: str
    """Required. What the image reference pins (digest or tag): part of the Job's name."""
    settings_document: str
    """Required. The stack's settings document (settings/document.py) as JSON."""
    url: str
    """Required. The endpoint verified (the edge's https URL, or the in-cluster Service)."""
    model: str | None = None
    """Default none: the first model the endpoint's ``GET /v1/models`` lists. The OpenAI model id verified; the
    stack passes its served model, so an endpoint that does not answer fails the verdict (exit 1) instead of
    leaving the Job without a model to ask for (exit 2)."""
    api_key_secret_arn: pulumi.Input[str] | None
    """The one Secrets Manager secret holding the key the Job sends; ``None`` when the target needs none."""
    kms_key_arn: pulumi.Input[str]
    """Required. The key the secrets are encrypted with."""
    region: str
    """Required. The secrets' region."""
    shape: PodShape
    """Required. CPU, memory and UID of the verify container."""
    partition: str = "aws"
    """Default ``aws``."""
    pod_selector: str = "app.kubernetes.io/name=inference"
    """Default ``app.kubernetes.io/name=inference``. The serving pods whose logs and restarts are checked."""
    in_cluster: InClusterTarget | None = None
    """Default none (through the edge). The Service's pods, when the Job targets them directly."""
    prometheus: tuple[str, int] | None = None
    """Default none. (namespace, port) of Prometheus when the GPU check is on."""
    canary: bool = False
    """Default false. The stack has a gated canary: the Job posts an Event per decision on itself."""
    active_deadline_seconds: int = DEFAULT_ACTIVE_DEADLINE_SECONDS
    """Default 1800 (60-86400). The Job fails after this long."""
    ttl_seconds_after_finished: int = DEFAULT_TTL_SECONDS
    """Default 86400 (0-2592000). The finished Job is deleted after this long."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """Default none. The rollout (and the namespace): the Job is created once they are ready."""


class VerificationJob(pulumi.ComponentResource):
    """The post-rollout verification Job: ``inferctl verify`` inside the cluster, awaited by ``pulumi up``."""

    job_name: str
    service_account: str

    def __init__(self, name: str, args: VerificationJobArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:verification:VerificationJob", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)
        self.service_account = SERVICE_ACCOUNT
        account = k8s.core.v1.ServiceAccount(
            f"{name}-service-account",
            metadata={"name": SERVICE_ACCOUNT, "namespace": args.namespace, "labels": LABELS},
            # The token is mounted per pod (the Job's pod needs it for the Role below), not by default.
            automount_service_account_token=False,
            opts=k8s_opts,
        )
        key_class = None
        waits: list[pulumi.Resource] = [account]
        if args.api_key_secret_arn is not None:
            identity, delivery = deliver_one_key(
                self,
                name,
                k8s_provider=args.k8s_provider,
                cluster_name=args.cluster_name,
                namespace=args.namespace,
                service_account=SERVICE_ACCOUNT,
                partition=args.partition,
                secret_arn=args.api_key_secret_arn,
                kms_key_arn=args.kms_key_arn,
                region=args.region,
                description="Reads the one API key the post-rollout verification sends",
            )
            key_class = delivery.class_name
            waits += [identity, delivery]
        role = k8s.rbac.v1.Role(
            f"{name}-pod-reader",
            metadata={"name": "verification-pod-reader", "namespace": args.namespace, "labels": LABELS},
            rules=[
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
                # With a canary: one Event per decision, on the Job itself (inferctl/verify/canary_events.py).
                *([{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}] if args.canary else []),
            ],
            opts=k8s_opts,
        )
        binding = k8s.rbac.v1.RoleBinding(
            f"{name}-pod-reader",
            metadata={"name": "verification-pod-reader", "namespace": args.namespace, "labels": LABELS},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "verification-pod-reader"},
            subjects=[{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": args.namespace}],
            opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=[role, account]),
        )
        self.job_name = _job_name(args)
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-settings",
            metadata={"name": self.job_name, "namespace": args.namespace, "labels": LABELS},
            data={SETTINGS_FILE: args.settings_document},
            immutable=True,
            opts=k8s_opts,
        )
        policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-egress",
            metadata={"name": "verification", "namespace": args.namespace, "labels": LABELS},
            spec=_network_policy(args),
            opts=k8s_opts,
        )
        waits += [binding, config_map, policy]
        if args.in_cluster is not None:
            # Triton's own policy admits the gateway and monitoring only; this adds the Job (policies add up).
            waits.append(
                k8s.networking.v1.NetworkPolicy(
                    f"{name}-to-triton",
                    metadata={"name": "verification-to-triton", "namespace": args.namespace, "labels": LABELS},
                    spec={
                        "podSelector": {"matchLabels": dict(args.in_cluster.pod_labels)},
                        "policyTypes": ["Ingress"],
                        "ingress": [
                            {
                                "from": [{"podSelector": {"matchLabels": LABELS}}],
                                "ports": [{"protocol": "TCP", "port": args.in_cluster.port}],
                            }
                        ],
                    },
                    opts=k8s_opts,
                )
            )
        k8s.batch.v1.Job(
            f"{name}-job",
            # A failed verdict leaves the Job Failed; without this the next `pulumi up` would wait on that
            # same failed Job again instead of verifying anew.
            metadata={
                "name": self.job_name,
                "namespace": args.namespace,
                "labels": LABELS,
                "annotations": {REPLACE_UNREADY: "true"},
            },
            spec={
                "backoffLimit": 0,
                "activeDeadlineSeconds": args.active_deadline_seconds,
                "ttlSecondsAfterFinished": args.ttl_seconds_after_finished,
                "template": {"metadata": {"labels": LABELS}, "spec": _pod_spec(args, key_class)},
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.k8s_provider,
                depends_on=[*args.depends_on, *waits],
                custom_timeouts=pulumi.CustomTimeouts(create=f"{create_timeout_seconds(args)}s"),
            ),
        )
        self.register_outputs({"job_name": self.job_name, "service_account": self.service_account})


def create_timeout_seconds(args: VerificationJobArgs) -> int:
    """How long ``pulumi up`` waits for the Job: its deadline plus the pod's scheduling and image pull. The
    rollout is not in it: the Job is created only once the rollout is ready (``depends_on``)."""
    return args.active_deadline_seconds + START_ALLOWANCE_SECONDS


def verify_command(args: VerificationJobArgs, *, key_file: str | None) -> list[str]:
    command = [
        "inferctl",
        "verify",
        "--stack",
        args.stack,
        "--settings-file",
        f"{SETTINGS_DIR}/{SETTINGS_FILE}",
        "--url",
        args.url,
        "--namespace",
        args.namespace,
        "--selector",
        args.pod_selector,
        "--out",
        f"{pods.WORK_DIR}/verify",
    ]
    if args.model is not None:
        command += ["--model", args.model]
    if args.canary:
        command += ["--event-job", _job_name(args)]
    if key_file is not None:
        command += ["--api-key-file", key_file]
    return command


def _pod_spec(args: VerificationJobArgs, key_class: str | None) -> dict[str, Any]:
    key_file = f"{pods.SECRETS_DIR}/{pods.API_KEY_FILE}" if key_class else None
    verify = pods.container("verify", args.image, verify_command(args, key_file=key_file), args.shape,
                            key_class=key_class)  # fmt: skip
    verify["volumeMounts"].append({"name": "settings", "mountPath": SETTINGS_DIR, "readOnly": True})
    spec = pods.pod_spec(SERVICE_ACCOUNT, [verify], args.shape, key_class=key_class, automount_token=True)
    spec["volumes"].append(
        {
            "name": "settings",
            "configMap": {
                "name": _job_name(args),
                "items": [{"key": SETTINGS_FILE, "path": SETTINGS_FILE}],
                "defaultMode": 0o444,
            },
        }
    )
    return spec


def _job_name(args: VerificationJobArgs) -> str:
    digest = hashlib.sha256(
        json.dumps([args.image_version, args.settings_document, args.url], sort_keys=True).encode()
    ).hexdigest()[:10]
    return f"verification-{digest}"


def _network_policy(args: VerificationJobArgs) -> dict[str, Any]:
    egress = [pods.dns_egress(), {"ports": [{"protocol": "TCP", "port": pods.HTTPS_PORT}]}]
    if args.in_cluster is not None:
        egress.append(
            {
                "to": [{"podSelector": {"matchLabels": dict(args.in_cluster.pod_labels)}}],
                "ports": [{"protocol": "TCP", "port": args.in_cluster.port}],
            }
        )
    if args.prometheus is not None:
        namespace, port = args.prometheus
        egress.append(
            {
                "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}],
                "ports": [{"protocol": "TCP", "port": port}],
            }
        )
    return {
        "podSelector": {"matchLabels": LABELS},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [],
        "egress": egress,
    }


def _validate(args: VerificationJobArgs) -> None:
    problems = []
    if not 60 <= args.active_deadline_seconds <= 86400:
        problems.append(f"active_deadline_seconds={args.active_deadline_seconds}: 60-86400")
    if not 0 <= args.ttl_seconds_after_finished <= 30 * 86400:
        problems.append(f"ttl_seconds_after_finished={args.ttl_seconds_after_finished}: 0-2592000")
    if not args.url.startswith(("http://", "https://")):
        problems.append(f"url={args.url!r}: http(s)://host[:port]")
    if args.in_cluster is None and not args.url.startswith("https://"):
        problems.append(f"url={args.url!r}: through the edge the Job speaks TLS (https://)")
    raise_if("VerificationJob", problems)
