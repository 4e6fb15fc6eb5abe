"""Issue 28 (keep round 3's cross-section contradictions at 100 %): a mutation sweep over the settings' declared
cross-checks (``inference_platform.settings.cross_checks.CROSS_CHECKS``).

For every rule and every shipped stack (dev, prod, npu) the table below holds one mutation of the stack file that
makes the rule's keys contradict each other. Each is refused with exactly one problem, reported at the rule's key,
whose message names every key on the other side; through ``inferctl plan`` it exits 2 with that one line, no
traceback and nothing planned or rendered. A rule that holds in production only is shown on dev by the same
mutation being accepted. A rule without a case for each stack fails the sweep, and so does a check that reads
another section without a rule declaring it (``test_every_cross_section_read_is_declared``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from inference_platform.catalog import endpoint_services
from inference_platform.catalog.regions import REGIONS
from inference_platform.inferctl.cli import main
from inference_platform.settings import SECTIONS, SettingsError, load_settings
from inference_platform.settings.base import CheckContext, ReadRecorder, SectionModel
from inference_platform.settings.cross_checks import CROSS_CHECKS, CrossCheck
from tests.settings.test_contradictions import PROJECT, STACKS, stack_values

STACK_NAMES = ("dev", "prod", "npu")
DELETE = object()
"""An edit's value that removes the key."""


@dataclass(frozen=True)
class Refused:
    """The mutation, refused at the rule's key naming its others (or, where another rule of the same stack
    refuses the same contradiction first, at ``at`` naming ``naming``: said in ``because``)."""

    edits: dict[str, Any]
    at: str | None = None
    naming: tuple[str, ...] = ()
    because: str = ""


@dataclass(frozen=True)
class Accepted:
    """A production-only rule on a development stack: the same contradiction is accepted there."""

    edits: dict[str, Any]
    because: str = field(default="")


def every(edits: dict[str, Any]) -> dict[str, Refused | Accepted]:
    return {s: Refused(edits) for s in STACK_NAMES}


def every_at(edits: dict[str, Any], at: str, naming: tuple[str, ...], because: str) -> dict[str, Refused | Accepted]:
    return {s: Refused(edits, at=at, naming=naming, because=because) for s in STACK_NAMES}


def endpoints_without(stack: str, group: tuple[str, ...], **needs: bool) -> dict[str, Any]:
    """No NAT, and every interface endpoint the stack needs but ``group``'s."""
    values, _ = stack_values(stack)
    cluster, fsx, batch = values.get("cluster", {}), values.get("fsx", {}), values.get("batch", {})
    needed = endpoint_services.required_services(
        karpenter=needs.get("karpenter", cluster.get("provisioning") == "karpenter"),
        fsx=needs.get("fsx", fsx.get("enabled", False)),
        batch=needs.get("batch", batch.get("enabled", False)),
    )
    kept = [s for s in needed if s not in group]
    edits: dict[str, Any] = {"network.natGateways": "none", "network.interfaceEndpoints": True,
                             "network.interfaceEndpointServices": kept}  # fmt: skip
    if "fsx" in needs:
        edits["fsx.enabled"] = needs["fsx"]
        if needs["fsx"]:
            # prod downloads from S3 otherwise (the cache unread: fsx-unread), with ranged GETs FSx has no use for
            # (download-concurrency-vs-source).
            edits["inference.model.source"] = "fsx"
            edits["coldStart.downloadConcurrency"] = DELETE
    if "batch" in needs:
        edits["batch.enabled"] = needs["batch"]
    if "karpenter" in needs:
        edits["cluster.provisioning"] = "karpenter" if needs["karpenter"] else "managed"
    return edits


NO_EDGE = {"edge": DELETE, "serving.auth.enabled": True}
IMAGE_CACHE = {"snapshotId": "snap-0a1b2c3d4e5f60718", "sizeGib": 100}
NO_IMAGE_CACHE = {"coldStart.imagePull": "parallel", "coldStart.imageCache": DELETE}
"""prod's cache is for its managed node groups: a mutation to Karpenter takes parallel pulls with it."""
"""A production stack without an edge authenticates in the pod (serving.auth: its own rule)."""
NO_LANE = {"batch.enabled": False}
"""prod and npu run the batch lane, which needs KEDA and Prometheus itself (its own rules)."""
DEV_LANE = {"batch.enabled": True}
NPU_DIGEST = stack_values("npu")[0]["cluster"]["neuronMonitorDigest"]
"""A production Neuron pool runs neuron-monitor by digest (its own rule)."""
LOAD = {"loadTest.enabled": True, "loadTest.targetRate": 5}
"""A load within every stack's tier and WAF limits (prod's default client is 'batch', 300 a minute)."""


MUTATIONS: dict[str, dict[str, Refused | Accepted]] = {
    "scale-down-vs-model-load": every({"inference.probes.startupSeconds": 3700}),
    "ceiling-vs-pool": every({"autoscaling.maxReplicas": 60}),
    "floor-vs-pool": every({"autoscaling.minReplicas": 60}),
    "replicas-vs-pool": {
        "dev": Refused({"autoscaling.enabled": False, "inference.replicas": 60}),
        "prod": Refused({"autoscaling.enabled": False, "inference.replicas": 60, **NO_LANE}),
        "npu": Refused({"autoscaling.enabled": False, "inference.replicas": 60, **NO_LANE}),
    },
    # --- the cold start's options (settings/cold_start.py)
    "image-pull-vs-ami": {
        "dev": Refused({"cluster.provisioning": "managed", "coldStart.imagePull": "parallel",
                        "nodePools.inference.amiFamily": "bottlerocket"}),
        # efa off: Bottlerocket EFA nodes are refused by the pool's own check (no memlock, no huge pages).
        "prod": Refused({"nodePools.inference.amiFamily": "bottlerocket", "nodePools.inference.efa": False}),
        "npu": Refused({"coldStart.imagePull": "parallel", "nodePools.inference.amiFamily": "bottlerocket"},
                       at="nodePools.inference.amiFamily",
                       because="Bottlerocket has no Neuron variant: the pool's own check refuses it first, so a Neuron "
                               "serving pool is always AL2023 and FastImagePull always applies"),
    },
    "image-pull-vs-instance": {
        stack: Refused({"coldStart.imagePull": "parallel", "nodePools.inference.instanceTypes": ["m7i.large"],
                        **({"coldStart.imageCache": DELETE} if stack == "prod" else {})},
                       at="nodePools.inference.instanceTypes", naming=("cluster.systemNodeGroup",),
                       because="every accelerator type has the 4 vCPUs and 7 GiB FastImagePull needs: a serving pool "
                               "of smaller nodes has no accelerators, which the pool's own check refuses first")
        for stack in STACK_NAMES
    },
    # dev runs Karpenter already; prod and npu as node-grace-vs-pod-grace switch to it.
    "image-cache-vs-provisioning": {
        "dev": Refused({"coldStart.imagePull": "cached", "coldStart.imageCache": IMAGE_CACHE}),
        "prod": Refused({"cluster.provisioning": "karpenter", "nodePools.inference.minSize": 0}),
        "npu": Refused({"cluster.provisioning": "karpenter", "nodePools.inference.minSize": 0,
                        "coldStart.imagePull": "cached", "coldStart.imageCache": IMAGE_CACHE}),
    },
    # A 1 TiB snapshot gives a zone one fast-restored volume at a time; each stack's scale-up asks for more nodes.
    "image-cache-credits-vs-scale-up": {
        "dev": Refused({"cluster.provisioning": "managed", "coldStart.imagePull": "cached",
                        "coldStart.imageCache": {**IMAGE_CACHE, "sizeGib": 1024}, "autoscaling.scaleUp.pods": 2}),
        "prod": Refused({"coldStart.imageCache.sizeGib": 1024}),
        "npu": Refused({"coldStart.imagePull": "cached", "coldStart.imageCache": {**IMAGE_CACHE, "sizeGib": 1024},
                        "autoscaling.scaleUp.pods": 2}),
    },
    "download-concurrency-vs-source": {
        "dev": Refused({"coldStart.downloadConcurrency": 32, "fsx.enabled": True}),
        "prod": Refused({"fsx.enabled": True, "inference.model.source": "auto"}),
        "npu": Refused({"coldStart.downloadConcurrency": 32}),
    },
    "weights-rate-vs-fsx": {
        "dev": Refused({"fsx.enabled": True, "coldStart.figures.weightsMiBps": 20000}),
        "prod": Refused({"fsx.enabled": True, "inference.model.source": "fsx", "coldStart.downloadConcurrency": DELETE,
                         "coldStart.figures.weightsMiBps": 20000}),
        "npu": Refused({"coldStart.figures.weightsMiBps": 20000}),
    },
    "weights-rate-vs-card": {
        "dev": Refused({"coldStart.figures.weightsMiBps": 100000}),
        "prod": Refused({"coldStart.figures.weightsMiBps": 100000}),
        "npu": Refused({"fsx.enabled": False, "coldStart.figures.weightsMiBps": 100000}),
    },
    # dev's one-GPU nodes hold a TP-2 replica over two nodes only with room in the pool and an SLO for its prefill.
    "standby-single-node": {
        "dev": Refused({"coldStart.standbyReplicas": 1, "serving.nodes": 2, "serving.tensorParallel": 2,
                        "nodePools.inference.maxSize": 6, "serving.slo.ttftP95Ms": 30000,
                        "serving.slo.ttftP50Ms": 20000}),
        "prod": Refused({"coldStart.standbyReplicas": 1, "serving.nodes": 2, "serving.tensorParallel": 8}),
        "npu": Refused({"coldStart.standbyReplicas": 1, "serving.nodes": 2}, at="serving.nodes",
                       because="the Neuron path serves from one node: serving's own check refuses a group first"),
    },
    "standby-needs-autoscaling": {
        "dev": Refused({"coldStart.standbyReplicas": 1, "autoscaling.enabled": False}),
        "prod": Refused({"coldStart.standbyReplicas": 1, "autoscaling.enabled": False, **NO_LANE}),
        "npu": Refused({"coldStart.standbyReplicas": 1, "autoscaling.enabled": False, **NO_LANE}),
    },
    # Each at a ceiling of exactly the pool's replica slots (dev 2 x 1 GPU, prod 2 zones x 2 p5 x 2, npu 4 x 1).
    "standby-vs-pool": {
        "dev": Refused({"coldStart.standbyReplicas": 1, "autoscaling.maxReplicas": 2}),
        "prod": Refused({"coldStart.standbyReplicas": 1, "autoscaling.maxReplicas": 8}),
        "npu": Refused({"coldStart.standbyReplicas": 1, "autoscaling.maxReplicas": 4}),
    },
    "autoscaling-needs-prometheus": {
        "dev": Refused({"observability.enabled": False}),
        "prod": Refused({"observability.enabled": False, **NO_LANE}),
        "npu": Refused({"observability.enabled": False, **NO_LANE}),
    },
    "batch-workers-off-accelerators": every({**DEV_LANE, "batch.workers.nodePool": "inference"}),
    "batch-vcpu-vs-system": every({**DEV_LANE, "batch.workers.cpu": 16}),
    "batch-worker-memory-vs-node": every({**DEV_LANE, "batch.workers.memoryGib": 64}),
    "batch-api-memory-vs-node": every({**DEV_LANE, "batch.api.memoryGib": 64}),
    "batch-memory-vs-system": every({**DEV_LANE, "batch.workers.memoryGib": 12, "batch.workers.maxReplicas": 8}),
    "batch-quota-client": every(
        {**DEV_LANE, "batch.quotas.clients": {"nobody": {"queuedTokens": 1000, "queuedRequests": 10}}}
    ),
    "batch-needs-edge": {
        "dev": Accepted({**DEV_LANE, "edge": DELETE}, "a development lane without an edge is reachable from "
                        "inside the cluster only, which development allows"),
        "prod": Refused({**NO_EDGE, "verification.enabled": False, "batch.quotas.clients": {}}),
        "npu": Refused(NO_EDGE),
    },
    "batch-needs-edge-auth": {
        "dev": Refused({**DEV_LANE, "edge.auth.enabled": False}),
        "prod": Refused({"edge.auth.enabled": False, "serving.auth.enabled": True}, at="edge.auth.enabled",
                        because="production refuses an edge without keys by itself (the lane's rule follows from it)"),
        "npu": Refused({"edge.auth.enabled": False, "serving.auth.enabled": True}, at="edge.auth.enabled",
                       because="production refuses an edge without keys by itself (the lane's rule follows from it)"),
    },
    "batch-needs-keda": every({**DEV_LANE, "autoscaling.enabled": False}),
    "batch-needs-prometheus": every_at(
        {**DEV_LANE, "observability.enabled": False}, "observability.enabled", ("autoscaling.enabled",),
        because="the lane needs KEDA (autoscaling), which needs this Prometheus: with autoscaling on, observability's "
                "own rule names the contradiction first and the lane's follows from it",
    ),
    "capacity-isl": every({"capacity.tokensPerDay": 1e8, "capacity.isl": 9000}),
    "capacity-osl": every({"capacity.tokensPerDay": 1e8, "capacity.isl": 1000, "capacity.osl": 16000}),
    "capacity-peak-vs-pool": every({"capacity.tokensPerDay": 1e12}),
    "neuron-monitor-digest": {
        "dev": Accepted({"nodePools.neuron": {"instanceTypes": ["inf2.xlarge"], "minSize": 0, "maxSize": 1}},
                        "development may run neuron-monitor by tag"),
        "prod": Refused({"nodePools.neuron": {"instanceTypes": ["inf2.xlarge"], "minSize": 0, "maxSize": 1}}),
        "npu": Refused({"cluster.neuronMonitorDigest": DELETE}),
    },
    "karpenter-min-size": {
        "dev": Refused({"nodePools.inference.minSize": 1}),
        "prod": Refused({"cluster.provisioning": "karpenter", **NO_IMAGE_CACHE}),
        "npu": Refused({"cluster.provisioning": "karpenter"}),
    },
    "karpenter-desired-size": {
        "dev": Refused({"nodePools.inference.desiredSize": 1}),
        "prod": Refused({"cluster.provisioning": "karpenter", "nodePools.inference.minSize": 0,
                         "nodePools.small-models.desiredSize": 1, **NO_IMAGE_CACHE}),
        "npu": Refused({"cluster.provisioning": "karpenter", "nodePools.inference.minSize": 0,
                        "nodePools.trn1.desiredSize": 1}),
    },
    "pool-zones": {
        "dev": Refused({"network.availabilityZones": ["us-west-2a", "us-west-2b"],
                        "nodePools.inference.availabilityZones": ["us-west-2c"]}),
        "prod": Refused({"network.availabilityZones": ["us-east-1a", "us-east-1c", "us-east-1d"], "network.azCount": 3}),
        "npu": Refused({"network.availabilityZones": ["us-east-2a", "us-east-2b"], "network.azCount": 2}),
    },
    "spot-role": {
        "dev": Refused({"keys.createSpotServiceRole": True, "nodePools.inference.capacityTypes": ["on-demand"]}),
        "prod": Refused({"keys.createSpotServiceRole": True}),
        "npu": Refused({"keys.createSpotServiceRole": True}),
    },
    "endpoints-for-provisioning": {
        "dev": Refused(endpoints_without("dev", endpoint_services.KARPENTER_SERVICES)),
        "prod": Refused(endpoints_without("prod", endpoint_services.MANAGED_SERVICES)),
        "npu": Refused(endpoints_without("npu", endpoint_services.MANAGED_SERVICES)),
    },
    "endpoints-for-fsx": {s: Refused(endpoints_without(s, endpoint_services.FSX_SERVICES, fsx=True))
                          for s in STACK_NAMES},
    # dev's Karpenter calls SQS too (its interruption queue): the lane's need shows on a managed dev.
    "endpoints-for-batch": {
        "dev": Refused(endpoints_without("dev", endpoint_services.BATCH_SERVICES, batch=True, karpenter=False)),
        "prod": Refused(endpoints_without("prod", endpoint_services.BATCH_SERVICES, batch=True)),
        "npu": Refused(endpoints_without("npu", endpoint_services.BATCH_SERVICES, batch=True)),
    },
    "fsx-zone": {
        "dev": Refused({"fsx.enabled": True, "fsx.availabilityZone": "us-west-2d"}),
        "prod": Refused({"fsx.availabilityZone": "us-east-1f"}),
        "npu": Refused({"fsx.availabilityZone": "us-east-2b", "network.availabilityZones": ["us-east-2a", "us-east-2c"],
                        "network.azCount": 2}),
    },
    "model-source-needs-fsx": {
        "dev": Refused({"inference.model.source": "fsx"}),
        "prod": Refused({"inference.model.source": "fsx"}),
        "npu": Refused({"inference.model.source": "fsx", "fsx.enabled": False}),
    },
    "fsx-unread": {
        "dev": Refused({"fsx.enabled": True, "inference.model.source": "download"}),
        "prod": Refused({"fsx.enabled": True}),
        "npu": Refused({"inference.model.source": "download"}),
    },
    "artifact-uri-vs-version": every({"serving.artifacts.engineUri": "s3://models-example/llama/engine/"}),
    "grace-vs-exit": every({"serving.server.exitTimeoutSeconds": 600, "inference.termination.gracePeriodSeconds": 120}),
    "node-grace-vs-pod-grace": {
        "dev": Refused({"nodePools.inference.terminationGracePeriod": "5m"}),
        "prod": Refused({"cluster.provisioning": "karpenter", "nodePools.inference.minSize": 0,
                         "nodePools.inference.terminationGracePeriod": "5m", **NO_IMAGE_CACHE}),
        "npu": Refused({"cluster.provisioning": "karpenter", "nodePools.inference.minSize": 0,
                        "nodePools.inference.terminationGracePeriod": "5m"}),
    },
    "explicit-control-behind-edge": every({"serving.server.modelControlMode": "explicit"}),
    "key-header-stripped": every({"serving.auth.enabled": True, "serving.auth.header": "x-api-key"}),
    "serving-pool-exists": every({"serving.nodePool": "nowhere"}),
    "backend-vs-accelerator": {
        "dev": Refused({"nodePools.inference.instanceTypes": ["inf2.xlarge"]}),
        "prod": Refused({"nodePools.inference.instanceTypes": ["inf2.48xlarge"], "cluster.neuronMonitorDigest": NPU_DIGEST}),
        "npu": Refused({"nodePools.inference.instanceTypes": ["g6e.12xlarge"]}),
    },
    # A prompt at maxInputLen + 3 x 100 tokens, within maxSeqLen with the default output.
    "verification-isl": {
        "dev": Refused({"verification.isl": {"mean": 4096, "spread": 100}}),
        "prod": Refused({"verification.isl": {"mean": 8192, "spread": 100}}),
        "npu": Refused({"verification.isl": {"mean": 2048, "spread": 100}}),
    },
    "verification-osl": every({"verification.osl": {"mean": 16000, "spread": 0}}),
    "verification-target": {
        "dev": Accepted({"verification.enabled": True, "edge": DELETE},
                        "development verifies the in-cluster Service over HTTP"),
        "prod": Refused({**NO_EDGE, **NO_LANE, "verification.client": DELETE}),
        "npu": Refused({**NO_EDGE, **NO_LANE, "verification.enabled": True}),
    },
    "verification-client": every({"verification.enabled": True, "verification.client": "nobody"}),
    "verification-tier-rate": {
        "dev": Refused({"verification.enabled": True, "edge.rateLimits.tiers.standard.requestsPerMinute": 1}),
        "prod": Refused({"edge.rateLimits.tiers.interactive.requestsPerMinute": 1}),
        "npu": Refused({"verification.enabled": True, "edge.rateLimits.tiers.standard.requestsPerMinute": 1}),
    },
    "verification-tier-streams": {
        "dev": Refused({"verification.enabled": True, "edge.rateLimits.tiers.standard.concurrentStreams": 1}),
        "prod": Refused({"edge.rateLimits.tiers.interactive.concurrentStreams": 1}),
        "npu": Refused({"verification.enabled": True, "edge.rateLimits.tiers.standard.concurrentStreams": 1}),
    },
    "verification-waf-ip": every({"verification.enabled": True, "edge.waf.ipRateLimit": 10}),
    "verification-waf-key": every({"verification.enabled": True, "edge.waf.apiKeyRateLimit": 10}),
    "load-test-pool": every({**LOAD, "loadTest.nodePool": "inference"}),
    "load-test-target": {
        "dev": Refused({**LOAD, "edge": DELETE}),
        "prod": Refused({**LOAD, **NO_EDGE, **NO_LANE, "verification.enabled": False}),
        "npu": Refused({**LOAD, **NO_EDGE, **NO_LANE}),
    },
    "load-test-client": every({**LOAD, "loadTest.client": "nobody"}),
    "load-test-workers-vs-system": every({**LOAD, "loadTest.workers": 30}),
    "load-test-tier-rate": {
        "dev": Refused({**LOAD, "edge.rateLimits.tiers.standard.requestsPerMinute": 60}),
        "prod": Refused({**LOAD, "edge.rateLimits.tiers.bulk.requestsPerMinute": 60}),
        "npu": Refused({**LOAD, "edge.rateLimits.tiers.standard.requestsPerMinute": 60}),
    },
    "load-test-waf-ip": {
        "dev": Refused({**LOAD, "edge.waf.ipRateLimit": 100}),
        "prod": Refused({**LOAD, "edge.waf.ipRateLimit": 100, "verification.enabled": False}),
        "npu": Refused({**LOAD, "edge.waf.ipRateLimit": 100}),
    },
    "batch-repository-name": {
        "dev": Refused({**DEV_LANE, "batch.image.repository": "inference"}),
        "prod": Refused({"batch.image.repository": "inference"}),
        "npu": Refused({"batch.image.repository": "inference-neuron"}),
    },
    "verification-repository-name": {
        "dev": Refused({"verification.enabled": True, "verification.image.repository": "inference"}),
        "prod": Refused({"verification.image.repository": "inference"}),
        "npu": Refused({"verification.enabled": True, "verification.image.repository": "inference-neuron"}),
    },
}  # fmt: skip


def mutate(stack: str, edits: dict[str, Any]) -> dict[str, Any]:
    values, _ = stack_values(stack)
    values = copy.deepcopy(values)
    for dotted, value in edits.items():
        node = values
        *parents, last = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        if value is DELETE:
            node.pop(last, None)
        else:
            node[last] = value
    return values


def problems(stack: str, edits: dict[str, Any]) -> list[tuple[str, str]]:
    values = mutate(stack, edits)
    _, region = stack_values(stack)
    try:
        load_settings(values, project=PROJECT, stack=stack, region=region)
    except SettingsError as err:
        return [(p.path, p.message) for p in err.problems]
    return []


RULES = {check.rule: check for check in CROSS_CHECKS}
CASES = [(rule, stack) for rule in RULES for stack in STACK_NAMES]


def test_every_rule_has_a_case_for_every_stack():
    assert set(MUTATIONS) == set(RULES), set(MUTATIONS) ^ set(RULES)
    missing = [(rule, stack) for rule, stack in CASES if stack not in MUTATIONS[rule]]
    assert not missing, missing
    for rule, stack in CASES:
        case = MUTATIONS[rule][stack]
        if isinstance(case, Accepted):
            assert RULES[rule].production_only and stack == "dev" and case.because, (rule, stack)
        elif case.at:
            assert case.because, f"{rule} on {stack} is refused at {case.at}: say which rule names it first"


def _expected(check: CrossCheck, case: Refused) -> tuple[str, tuple[str, ...]]:
    return (case.at, case.naming) if case.at else (check.key, check.others)


@pytest.mark.parametrize(("rule", "stack"), CASES, ids=[f"{r}-{s}" for r, s in CASES])
def test_each_contradiction_is_one_problem_naming_both_keys(rule, stack):
    check, case = RULES[rule], MUTATIONS[rule][stack]
    found = problems(stack, case.edits)
    if isinstance(case, Accepted):
        assert not [p for p, _ in found if check.key_pattern().fullmatch(p)], found
        return
    at, naming = _expected(check, case)
    assert len(found) == 1, found
    ((path, message),) = found
    assert check.key_pattern().fullmatch(path) if not case.at else path == at, found
    unnamed = [other for other in naming if not check.names(other, message)]
    assert not unnamed, f"{path}: {message!r} does not name {unnamed}"


# --- through the real command ------------------------------------------------------------------------------------


def stack_file(stack: str, edits: dict[str, Any]) -> str:
    doc = yaml.safe_load((STACKS / f"Pulumi.{stack}.yaml").read_text())
    config = {k: v for k, v in doc["config"].items() if not k.startswith(f"{PROJECT}:")}
    config.update({f"{PROJECT}:{k}": v for k, v in mutate(stack, edits).items()})
    return yaml.safe_dump({**doc, "config": config})


REFUSED = [(rule, stack) for rule, stack in CASES if isinstance(MUTATIONS[rule][stack], Refused)]


@pytest.mark.parametrize(("rule", "stack"), REFUSED, ids=[f"{r}-{s}" for r, s in REFUSED])
def test_inferctl_plan_exits_2_with_one_line_and_nothing_planned(tmp_path, capsys, rule, stack):
    check, case = RULES[rule], MUTATIONS[rule][stack]
    file = tmp_path / f"Pulumi.{stack}.yaml"
    file.write_text(stack_file(stack, case.edits))
    out = tmp_path / "out"
    code = main(["plan", "--stack", stack, "--stack-file", str(file), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and "program failed" not in err, err
    lines = [ln.strip() for ln in err.splitlines() if ln.strip().startswith("- ")]
    at, _ = _expected(check, case)
    assert len(lines) == 1, err
    assert lines[0].startswith(f"- {at}") or check.key_pattern().match(lines[0][2:]), err
    assert not out.exists() or not any(out.rglob("*")), "nothing is planned or rendered"


# --- the declaration is complete ---------------------------------------------------------------------------------

COLD_START = (
    "the cold-start model behind autoscaling's ramp check (settings/cold_start.py: the provisioner, the "
    "cache, the planned ceiling), whose problem names the autoscaling bound it refuses and the cold start"
)
ZONES = "the cluster's zones (network.availabilityZones or azCount), which size what a pool holds"
NAT = "the NAT addresses the WAF's per-IP limit counts (network.natGateways, azCount)"
CONTEXT_READS = {
    # {section, section it reads}: why no rule names the pair (the read resolves context for a rule of other keys).
    frozenset({"nodePools", "network"}): ZONES,
    frozenset({"capacity", "network"}): ZONES,
    frozenset({"inference", "network"}): ZONES,
    frozenset({"autoscaling", "network"}): ZONES,
    frozenset({"coldStart", "network"}): ZONES,  # standby-vs-pool counts the pool's replica slots per zone
    frozenset({"loadTest", "network"}): NAT,
    frozenset({"verification", "network"}): NAT,
    frozenset({"autoscaling", "capacity"}): COLD_START,
    frozenset({"autoscaling", "cluster"}): COLD_START,
    frozenset({"autoscaling", "fsx"}): COLD_START,
    # node-grace-vs-pod-grace: the provisioner tells whether the pool's terminationGracePeriod applies at all.
    frozenset({"inference", "cluster"}): "the provisioner (cluster.provisioning): only a Karpenter pool drains its "
    "nodes on its own terminationGracePeriod",
    # Not {"autoscaling", "coldStart"}: the ramp check reads coldStart's options and figures, which set the scale-up
    # it refuses a bound against (a measured coldStart.figures.nodeLaunchSeconds can leave autoscaling.maxReplicas
    # short of the peak), so that read is no mere context; the pair is declared by standby-needs-autoscaling and
    # standby-vs-pool.
}


def _reads(stack: str, edits: dict[str, Any]) -> set[tuple[str, str]]:
    """(section, other section) for every read a section's check makes of another, on the mutated stack (as
    load_settings runs them: inference_platform.settings.base.ReadRecorder)."""
    values = mutate(stack, edits)
    _, region = stack_values(stack)
    parsed: dict[str, SectionModel] = {}
    for section in SECTIONS:
        try:
            parsed[section.key] = section.model_validate(values.get(section.key, {}))
        except ValidationError:
            continue  # a section a mutation makes invalid reports only that
    out = set()
    for key, model in parsed.items():
        recorder = ReadRecorder(parsed)
        environment = values.get("environment", "development")
        model.problems(CheckContext(stack=stack, environment=environment, region=REGIONS[region], sections=recorder))
        out |= {(key, other) for other in recorder.read - {key}}
    return out


def _declared_pairs() -> set[tuple[str, str]]:
    def section(key: str) -> str:
        return key.split(".")[0]

    return {frozenset({section(c.key), section(o)}) for c in CROSS_CHECKS for o in c.others}


def test_every_cross_section_read_is_declared():
    reads: set[tuple[str, str]] = set()
    for stack in STACK_NAMES:
        reads |= _reads(stack, {})
        for rule in RULES:
            reads |= _reads(stack, MUTATIONS[rule][stack].edits)
    undeclared = sorted(pair for pair in reads if frozenset(pair) not in _declared_pairs() | set(CONTEXT_READS))
    assert not undeclared, f"checks read these sections without a rule in settings/cross_checks.py: {undeclared}"
    stale = [sorted(pair) for pair in CONTEXT_READS if pair not in {frozenset(r) for r in reads}]
    assert not stale, f"CONTEXT_READS lists pairs no check reads: {stale}"
