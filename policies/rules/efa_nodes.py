"""``efa-nodes-lock-memory`` (mandatory): a launch template that attaches EFA interfaces boots nodes whose containers
can register memory with EFA.

EFA registers (pins) its buffers, so a container needs a locked-memory limit far above containerd's default, and a
non-root pod cannot raise it itself (IPC_LOCK is inert without ambient capabilities: ``catalog/efa.py``); libfabric's
EFA provider also backs its bounce buffers with 2 MiB huge pages, which an EFA pod requests and the node must have
reserved (else the pod stays Pending). On the EKS AL2023 AMI both come from the launch template's user data: a
nodeadm ``NodeConfig`` whose ``containerd.baseRuntimeSpec.process.rlimits`` sets ``RLIMIT_MEMLOCK`` (awslabs/
amazon-eks-ami v20260724 nodeadm/doc/examples.md "Modifying container RLIMITs") and a cloud-init script raising
``nr_hugepages`` (``catalog.efa.efa_hugepages_script``).

The class this catches: a node pool rendered without them. A Bottlerocket EFA pool was accepted and got neither
(``node_config_parts`` writes nodeadm documents for AL2023 only): every EFA pod on it would have failed at its first
memory registration, in the cluster and nowhere before. A launch template whose user data is not known at preview
is not judged.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.catalog.efa import HUGEPAGES_2MI_SYSFS
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.user_data import launch_template, parse

EFA_INTERFACE_TYPES = frozenset({"efa", "efa-only"})
MIN_MEMLOCK_BYTES = 2**62
"""Effectively unlimited: what AWS's EFA guidance asks of the container runtime (our nodes get 2**63 - 1, the
largest int64 nodeadm reads)."""


def efa_interfaces(props: Any) -> int:
    return sum(1 for i in as_list(get(props, "networkInterfaces")) if get(i, "interfaceType") in EFA_INTERFACE_TYPES)


def user_data_problems(user_data: str | None) -> list[str]:
    """What an EFA node booted from this (base64 MIME) user data lacks: the memlock limit, the huge pages."""
    parsed = parse(user_data)
    if parsed.error:
        return [parsed.error]
    configs, scripts = parsed.configs, parsed.scripts
    out = []
    limits = [
        r
        for config in configs
        for r in as_list(get(config, "spec.containerd.baseRuntimeSpec.process.rlimits"))
        if get(r, "type") == "RLIMIT_MEMLOCK"
    ]
    if not any(_at_least(get(r, "hard")) and _at_least(get(r, "soft")) for r in limits):
        out.append(
            "no nodeadm NodeConfig sets the containers' RLIMIT_MEMLOCK unlimited (containerd.baseRuntimeSpec."
            "process.rlimits): EFA cannot register a non-root pod's memory"
        )
    if not any(HUGEPAGES_2MI_SYSFS in s or "vm.nr_hugepages" in s for s in scripts):
        out.append("no user-data script reserves 2 MiB huge pages: EFA pods requesting hugepages-2Mi stay Pending")
    return out


def _at_least(value: Any) -> bool:
    try:
        return int(value) >= MIN_MEMLOCK_BYTES
    except (TypeError, ValueError):
        return False


def _lock_memory(args: ResourceValidationArgs, report: ReportViolation) -> None:
    props = launch_template(args.resource_type, args.props)
    if props is None or not efa_interfaces(props):
        return
    for problem in user_data_problems(get(props, "userData")):
        report(f"launch template with EFA interfaces: {problem}")


POLICIES = [
    ResourceValidationPolicy(
        name="efa-nodes-lock-memory",
        description="A launch template that attaches EFA interfaces gives containers an unlimited locked-memory "
        "limit (nodeadm NodeConfig) and reserves 2 MiB huge pages (a user-data script): EFA registers memory from "
        "both.",
        validate=_lock_memory,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
