"""Which files pin facts read from an upstream release, and what to re-read when that release moves.

Each entry names its upstream (a PyPI distribution the locks pin, or a Helm chart the catalog pins), the version
the facts were read at, the files that pin them (the vendored table, the citation, the tests), and what to do.
``make deps-check`` lists the entries whose upstream has a newer release; tests/test_locks.py checks that every
file exists and cites the version, and that the PyPI ones are read at the locked version (tests/locks.py
``moved_past`` says what to re-read when ``make lock`` moves one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Kind = Literal["pypi", "chart"]


@dataclass(frozen=True)
class PinnedFact:
    kind: Kind
    name: str
    """The PyPI distribution, or the chart's name as the catalog pins it (``gateway-helm`` for Envoy Gateway)."""
    read_at: str
    files: tuple[str, ...]
    """Repository paths citing ``read_at``: vendored data, the sources quoting it, the tests pinning it."""
    reread: str
    """What to re-read or re-run when the upstream moves past ``read_at``."""


FACTS: Final[tuple[PinnedFact, ...]] = (
    PinnedFact(
        "pypi",
        "botocore",
        "1.44.8",
        (
            "policies/rules/names.py",
            "catalog/aws_names.py",
            "catalog/downstream_limits.py",
            "components/edge/public_endpoint.py",
            "batch/store.py",
            "tests/policies/test_name_rules.py",
            "tests/catalog/test_aws_names.py",
            "tests/batch/test_upstream_pins.py",
        ),
        "re-read the service-model shapes the name table cites (tests/policies/test_name_rules.py compares them), "
        "the ElastiCache node types (aws_names.py), the ALB/WAFv2 limits (downstream_limits.py) and the SQS/S3 limits "
        "tests/batch/test_upstream_pins.py reads",
    ),
    PinnedFact(
        "pypi",
        "moto",
        "5.2.5",
        (
            "catalog/instance_offerings.json",
            "catalog/offerings.py",
            "catalog/aws_names.py",
            "catalog/instance_io.json",
            "catalog/instance_io.py",
            "batch/store.py",
            "tests/catalog/test_offerings.py",
            "tests/catalog/test_aws_names.py",
            "tests/policies/test_node_rules.py",
            "tests/settings/test_offerings.py",
            "inferctl/image_cache/build.py",
        ),
        "re-vendor the instance offerings (python -m inference_platform.catalog.offerings_refresh) and "
        "re-check the zones the tests name, the ELB TLS policy table (aws_names.py) and the instance data paths "
        "(python -m inference_platform.catalog.instance_io_refresh)",
    ),
    PinnedFact(
        "pypi",
        "pulumi-aws",
        "7.51.1",
        ("policies/rules/names.py", "tests/policies/test_name_rules.py", "tests/data/upstream/replacement.json"),
        "re-read the SDK docstrings the name table cites and the ForceNew properties of replacement.json",
    ),
    PinnedFact(
        "pypi",
        "pulumi",
        "3.272.0",
        ("tests/components/multilang/plugin_process.py", "tests/components/multilang/test_sdk_limits.py"),
        "re-check the SDK limits of the component provider host (tests/components/multilang/test_sdk_limits.py)",
    ),
    PinnedFact(
        "chart",
        "gateway-helm",
        "v1.9.0",
        (
            "tests/data/upstream/envoy_gateway_v1.9.0_backendtrafficpolicy_limits.json",
            "catalog/downstream_limits.py",
            "catalog/crds.py",
            "tests/components/edge/test_envoy_gateway_upstream.py",
            "tests/components/edge/test_edge_abuse_upstream.py",
            "tests/components/edge/test_bearer_upstream.py",
        ),
        "re-read Envoy Gateway's CRD limits (the JSON under tests/data/upstream), the SecurityPolicy and rate-limit "
        "behaviour the *_upstream tests pin, and the CRDs crds.py lists",
    ),
    PinnedFact(
        "chart",
        "keda",
        "2.20.2",
        (
            "tests/data/upstream/keda_v2.20.2_scaledobject_limits.json",
            "tests/data/upstream/keda_v2.20.2_aws_sqs_queue_scaler.json",
            "catalog/downstream_limits.py",
            "catalog/crds.py",
        ),
        "re-read the ScaledObject CRD limits and the aws-sqs-queue scaler's metadata (tests/data/upstream)",
    ),
    PinnedFact(
        "chart",
        "secrets-store-csi-driver",
        "1.6.0",
        (
            "components/secrets/secrets_store_csi.py",
            "policies/rules/secret_sync.py",
            "tests/components/secrets/test_secrets_store_csi_upstream.py",
        ),
        "re-read the chart's syncSecret switch (templates/role-syncsecret.yaml) the upstream test pins",
    ),
    PinnedFact(
        "chart",
        "aws-load-balancer-controller",
        "3.5.0",
        ("catalog/webhooks.py", "components/edge/load_balancer_controller.py"),
        "re-read the chart's webhooks (templates/webhook.yaml) webhooks.py lists",
    ),
    PinnedFact(
        "chart",
        "kube-prometheus-stack",
        "88.5.3",
        ("components/observability/monitoring_stack.py", "tests/components/observability/test_monitoring_stack.py"),
        "re-read the values the monitoring stack sets, and its Grafana subchart's env handling (grafana 12.11.1)",
    ),
    PinnedFact(
        "chart",
        "karpenter",
        "1.14.1",
        ("catalog/crds.py", "components/compute/karpenter_node_pool.py"),
        "re-read the NodePool/EC2NodeClass CRDs (karpenter-crd) crds.py lists",
    ),
)


def fact_for(kind: Kind, name: str) -> PinnedFact:
    for fact in FACTS:
        if fact.kind == kind and fact.name == name:
            return fact
    raise KeyError(f"no pinned fact for {kind}:{name} in tools/deps_check/facts.py")
