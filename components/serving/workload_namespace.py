"""A namespace for one platform workload and the service accounts its pods run as.

The service accounts must exist under the names Pod Identity associations bind (an association is by
name only), so they are created with the namespace rather than left to each rollout. Pod Security
Admission enforces, warns and audits the ``restricted`` profile: every platform pod meets it, and the
policy pack checks each pod template against its namespace's level before admission would refuse it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.components.common.errors import raise_if

POD_SECURITY_LEVELS = ("privileged", "baseline", "restricted")
DEFAULT_ENFORCE = "restricted"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True, kw_only=True)
class WorkloadNamespaceArgs:
    """What a workload namespace needs: the cluster's provider, its name, service accounts and Pod Security level."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    namespace: str
    """Required. Namespace name (a DNS label)."""
    service_accounts: Sequence[str] = field(default_factory=tuple)
    """Default none. Service accounts to create in the namespace."""
    enforce: str = DEFAULT_ENFORCE
    """Default ``restricted``. Pod Security Admission level enforced (privileged, baseline, restricted); a
    lower level is for a workload that cannot meet restricted, and the policy pack asks for an exemption."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Default none. Extra namespace labels."""


class WorkloadNamespace(pulumi.ComponentResource):
    """A namespace for one platform workload, its Pod Security level and the service accounts its pods run as."""

    namespace: str
    service_accounts: list[str]

    def __init__(self, name: str, args: WorkloadNamespaceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:workloads:WorkloadNamespace", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)
        labels = {
            **args.labels,
            "app.kubernetes.io/part-of": "inference-platform",
            "pod-security.kubernetes.io/enforce": args.enforce,
            "pod-security.kubernetes.io/warn": "restricted",
            "pod-security.kubernetes.io/audit": "restricted",
        }
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata={"name": args.namespace, "labels": labels}, opts=k8s_opts
        )
        after = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[namespace]))
        for account in args.service_accounts:
            k8s.core.v1.ServiceAccount(
                f"{name}-{account}",
                metadata={
                    "name": account,
                    "namespace": args.namespace,
                    "labels": {"app.kubernetes.io/part-of": "inference-platform"},
                },
                # Pods get AWS credentials from Pod Identity, not from a mounted API token; those that
                # need the Kubernetes API opt in per pod.
                automount_service_account_token=False,
                opts=after,
            )
        self.namespace = args.namespace
        self.service_accounts = list(args.service_accounts)
        self.register_outputs({"namespace": self.namespace, "service_accounts": self.service_accounts})


def _validate(args: WorkloadNamespaceArgs) -> None:
    problems = []
    for value in (args.namespace, *args.service_accounts):
        if not _DNS_LABEL.match(value):
            problems.append(f"{value!r} is not a DNS label (lower-case letters, digits, '-')")
    if len(set(args.service_accounts)) != len(args.service_accounts):
        problems.append(f"service_accounts {list(args.service_accounts)} repeats a name")
    if args.enforce not in POD_SECURITY_LEVELS:
        problems.append(f"enforce={args.enforce!r}: one of {', '.join(POD_SECURITY_LEVELS)}")
    reserved = [k for k in args.labels if k.startswith("pod-security.kubernetes.io/")]
    if reserved:
        problems.append(f"labels {reserved} are set from enforce")
    raise_if("WorkloadNamespace", problems)
