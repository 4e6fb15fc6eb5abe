"""Accelerator workloads that scale or run outside the rollouts' own bounds.

- ``autoscaling-within-accelerator-capacity``: a KEDA ScaledObject, a HorizontalPodAutoscaler
  (autoscaling/v1, v2) or a KEDA ScaledJob whose target asks for accelerators may, at its maximum (KEDA's
  default ``maxReplicaCount`` is 100), ask for no more than the pools its pods can land on hold (node groups:
  ``maxSize`` x the accelerators of the largest type; Karpenter NodePools: their ``spec.limits``; pools
  chosen by the pod's nodeSelector and required node affinity against each pool's labels, all pools of that
  accelerator when nothing selects), nor more than ``maxAccelerators``. Without ``maxAccelerators`` (0) the
  ceiling is derived from the stack's own pools: a scaler whose accelerators no pool of the stack holds is
  refused (the ceiling is zero: set ``maxAccelerators`` where another stack makes the pools), and one landing
  on a NodePool with no limit on its accelerator may ask for no more than the bounded pools hold. Units are compared like for like: ``nvidia.com/gpu``,
  ``aws.amazon.com/neuron`` devices, ``aws.amazon.com/neuroncore`` cores. A LeaderWorkerSet replica counts its
  leader and ``size - 1`` workers, a ScaledJob its ``parallelism``.
- ``accelerator-pods-bounded``: a CronJob or a bare Pod on accelerator nodes (it requests an accelerator, or
  its nodeSelector, required affinity or tolerations name ``nvidia.com/gpu*``, ``aws.amazon.com/neuron*``, the
  pools' ``accelerator`` label or an accelerated instance type) is bounded: a CronJob forbids or replaces
  overlapping runs (the default ``Allow`` stacks runs on the accelerators) and its Job template sets
  ``activeDeadlineSeconds`` and ``backoffLimit`` (at most 10), as ``jobs-bounded`` asks of Jobs; so does the
  ``jobTargetRef`` of a KEDA ScaledJob there; a bare Pod, which no controller bounds or scales, sets
  ``activeDeadlineSeconds``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ResourceValidationArgs,
    StackValidationArgs,
)

from inference_platform import catalog
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy, StackValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.jobs import MAX_BACKOFF_LIMIT
from inference_platform.policies.rules.nodes import LAUNCH_TEMPLATE, NODE_GROUP, NODE_POOL
from inference_platform.policies.rules.workloads import LEADER_WORKER_SET, containers

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
SCALED_JOB = "kubernetes:keda.sh/v1alpha1:ScaledJob"
HPAS = frozenset(f"kubernetes:autoscaling/{v}:HorizontalPodAutoscaler" for v in ("v1", "v2", "v2beta2"))
CRON_JOB = "kubernetes:batch/v1:CronJob"
POD = "kubernetes:core/v1:Pod"
KEDA_DEFAULT_MAX_REPLICAS = 100
TARGETS = {
    "Deployment": ("kubernetes:apps/v1:Deployment",),
    "StatefulSet": ("kubernetes:apps/v1:StatefulSet",),
    "LeaderWorkerSet": (LEADER_WORKER_SET,),
}
RESOURCES = (catalog.RESOURCE_NVIDIA_GPU, catalog.RESOURCE_NEURON_DEVICE, catalog.RESOURCE_NEURON_CORE)
ACCELERATOR_KEYS = ("nvidia.com/gpu", "aws.amazon.com/neuron")
POOL_ACCELERATOR_LABEL = "accelerator"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
NODEPOOL_LABEL = "karpenter.sh/nodepool"


def _number(value: Any) -> float:
    text = str(value)
    try:
        return float(text)
    except ValueError:
        return 0.0


def pod_accelerators(spec: Any) -> dict[str, float]:
    """Accelerators one pod asks for, by resource (limits, else requests; init containers run before)."""
    total: dict[str, float] = {}
    for where, container in containers(spec):
        if not where.startswith("containers/"):
            continue
        amounts = {**dict(get(container, "resources.requests") or {}), **dict(get(container, "resources.limits") or {})}
        for resource in RESOURCES:
            if resource in amounts:
                total[resource] = total.get(resource, 0.0) + _number(amounts[resource])
    return total


def _scaled(amounts: Mapping[str, float], factor: float) -> dict[str, float]:
    return {k: v * factor for k, v in amounts.items()}


def _replica(target: PolicyResource) -> tuple[dict[str, float], list[Any]]:
    """Accelerators of one replica of a scale target and its pod specs."""
    if target.resource_type == LEADER_WORKER_SET:
        template = get(target.props, "spec.leaderWorkerTemplate") or {}
        size = int(_number(get(template, "size", 1)))
        worker = get(template, "workerTemplate.spec") or {}
        leader = get(template, "leaderTemplate.spec") or worker
        amounts = pod_accelerators(leader)
        for k, v in _scaled(pod_accelerators(worker), max(size - 1, 0)).items():
            amounts[k] = amounts.get(k, 0.0) + v
        return amounts, [leader, worker]
    spec = get(target.props, "spec.template.spec") or {}
    return pod_accelerators(spec), [spec]


def _selected_labels(spec: Any) -> tuple[dict[str, str], list[list[tuple[str, list[str]]]]]:
    selector = {str(k): str(v) for k, v in dict(get(spec, "nodeSelector") or {}).items()}
    terms = []
    path = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    for term in as_list(get(spec, path)):
        terms.append(
            [
                (str(get(e, "key")), [str(v) for v in as_list(get(e, "values"))])
                for e in as_list(get(term, "matchExpressions"))
                if get(e, "operator") == "In"
            ]
        )
    return selector, terms


def _pool_labels(pool: PolicyResource) -> dict[str, str]:
    if pool.resource_type == NODE_GROUP:
        labels = {str(k): str(v) for k, v in dict(get(pool.props, "labels") or {}).items()}
        if get(pool.props, "nodeGroupName"):
            labels[NODEGROUP_LABEL] = str(get(pool.props, "nodeGroupName"))
        return labels
    labels = {str(k): str(v) for k, v in dict(get(pool.props, "spec.template.metadata.labels") or {}).items()}
    if get(pool.props, "metadata.name"):
        labels[NODEPOOL_LABEL] = str(get(pool.props, "metadata.name"))
    return labels


def _places(spec: Any, pool: PolicyResource) -> bool:
    """Whether the pod's node selection can land on the pool. Only labels the pool sets (and the instance
    type) are compared: a label the nodes get elsewhere (zone, architecture, capacity type) counts as met."""
    labels = _pool_labels(pool)
    types = _node_types(pool)

    def meets(key: str, values: list[str]) -> bool:
        if key == INSTANCE_TYPE_LABEL and types:
            return any(v in types for v in values)
        return key not in labels or labels[key] in values

    if not all(meets(k, [v]) for k, v in selector_items(spec)):
        return False
    terms = _selected_labels(spec)[1]
    return not terms or any(all(meets(k, values) for k, values in term) for term in terms)


def selector_items(spec: Any) -> list[tuple[str, str]]:
    return list(_selected_labels(spec)[0].items())


def _node_types(pool: PolicyResource) -> list[str]:
    if pool.resource_type == NODE_GROUP:
        types = [str(t) for t in as_list(get(pool.props, "instanceTypes"))]
        if not types:
            for deps in (pool.property_dependencies or {}).values():
                types += [str(get(d.props, "instanceType")) for d in deps if d.resource_type == LAUNCH_TEMPLATE]
        return [t for t in types if t and t != "None"]
    for req in as_list(get(pool.props, "spec.template.spec.requirements")):
        if get(req, "key") == INSTANCE_TYPE_LABEL and get(req, "operator") == "In":
            return [str(v) for v in as_list(get(req, "values"))]
    return []


def _per_node(types: list[str], resource: str) -> float:
    best = 0
    for name in types:
        if name not in catalog.CATALOG:
            continue
        kind = catalog.CATALOG[name]
        if resource == catalog.RESOURCE_NEURON_CORE:
            best = max(best, kind.neuron_cores)
        elif kind.resource_name == resource:
            best = max(best, kind.accelerator_count)
    return float(best)


def _pool_capacity(pool: PolicyResource, resource: str) -> float | None:
    """Most of ``resource`` a pool can hold; None when it holds none of it."""
    if pool.resource_type == NODE_POOL:
        limits = dict(get(pool.props, "spec.limits") or {})
        if resource in limits:
            return _number(limits[resource])
        per_node = _per_node(_node_types(pool), resource)
        return None if not per_node else float("inf")  # no limit on it: the budget rule reports that
    per_node = _per_node(_node_types(pool), resource)
    if not per_node:
        return None
    return per_node * _number(get(pool.props, "scalingConfig.maxSize", 0))


def _capacity(pools: list[PolicyResource], specs: list[Any], resource: str) -> tuple[float, list[str]] | None:
    holding = [(p, c) for p in pools if (c := _pool_capacity(p, resource)) is not None]
    if not holding:
        return None  # no pool of this stack holds it: only the budget applies
    placed = [(p, c) for p, c in holding if all(_places(s, p) for s in specs if s)]
    return sum(c for _, c in placed), [f"{p.name} {c:g}" for p, c in placed]


def _finite(pools: list[PolicyResource], resource: str) -> float:
    """What the stack's pools with a bound hold of ``resource`` together (node groups' maxSize, NodePools'
    limits): the derived ceiling when a pool without a limit would make it infinite."""
    return sum(c for p in pools if (c := _pool_capacity(p, resource)) is not None and c != float("inf"))


def _scalers(resources: list[PolicyResource]) -> Iterator[tuple[PolicyResource, float, dict[str, float], list[Any]]]:
    """(scaler, maximum replicas, accelerators per replica, pod specs) of every accelerator scaler."""
    by_kind: dict[tuple[str, str, str], PolicyResource] = {}
    for r in resources:
        for kind, types in TARGETS.items():
            if r.resource_type in types:
                namespace = str(get(r.props, "metadata.namespace", "default"))
                by_kind[(kind, namespace, str(get(r.props, "metadata.name") or r.name))] = r
    for r in resources:
        namespace = str(get(r.props, "metadata.namespace", "default"))
        if r.resource_type == SCALED_JOB:
            job = get(r.props, "spec.jobTargetRef") or {}
            spec = get(job, "template.spec") or {}
            per_job = _scaled(pod_accelerators(spec), max(_number(get(job, "parallelism", 1)), 1.0))
            maximum = _number(get(r.props, "spec.maxReplicaCount", KEDA_DEFAULT_MAX_REPLICAS))
            if per_job:
                yield r, maximum, per_job, [spec]
            continue
        if r.resource_type == SCALED_OBJECT:
            ref = get(r.props, "spec.scaleTargetRef") or {}
            maximum = _number(get(r.props, "spec.maxReplicaCount", KEDA_DEFAULT_MAX_REPLICAS))
        elif r.resource_type in HPAS:
            ref = get(r.props, "spec.scaleTargetRef") or {}
            maximum = _number(get(r.props, "spec.maxReplicas", 0))
        else:
            continue
        target = by_kind.get((str(get(ref, "kind", "Deployment")), namespace, str(get(ref, "name"))))
        if target is None:
            continue  # a target of another stack: judged where it is made
        per_replica, specs = _replica(target)
        if per_replica:
            yield r, maximum, per_replica, specs


def _within_capacity(args: StackValidationArgs, report: ReportViolation) -> None:
    budget = _number(args.get_config().get("maxAccelerators") or 0)
    resources = list(args.resources)
    pools = [r for r in resources if r.resource_type in (NODE_GROUP, NODE_POOL)]
    for scaler, maximum, per_replica, specs in _scalers(resources):
        kind = scaler.resource_type.rsplit(":", 1)[-1]
        at = f"{kind} {get(scaler.props, 'metadata.namespace', 'default')}/{get(scaler.props, 'metadata.name')}"
        for resource, each in per_replica.items():
            if each <= 0:
                continue
            wanted = maximum * each
            found = _capacity(pools, specs, resource)
            if found is not None and wanted > found[0]:
                where = ", ".join(found[1]) or "none of the pools matches its node selection"
                report(
                    f"{at}: at its maximum {maximum:g} x {each:g} {resource} = {wanted:g}, more than the pools its "
                    f"pods can land on hold ({found[0]:g}: {where}); lower the maximum or grow the pool",
                    scaler.urn,
                )
            if not budget and found is None:
                # Issue 28: no configured ceiling and no pool to derive one from: a ScaledObject asking for
                # tens of thousands of GPUs passed. The stack's own pools are the ceiling; with none, zero.
                report(
                    f"{at}: at its maximum {maximum:g} x {each:g} {resource} = {wanted:g}, and no pool of this stack "
                    f"holds {resource}: with no maxAccelerators configured the ceiling is the stack's own pools "
                    "(none); set maxAccelerators where another stack makes the pools",
                    scaler.urn,
                )
            elif not budget and found is not None and found[0] == float("inf") and wanted > _finite(pools, resource):
                report(
                    f"{at}: at its maximum {maximum:g} x {each:g} {resource} = {wanted:g}, more than the stack's pools "
                    f"with a limit hold ({_finite(pools, resource):g}), and a pool it can land on sets no limit on "
                    f"{resource} ({', '.join(found[1])}); set that NodePool's spec.limits or maxAccelerators",
                    scaler.urn,
                )
            if budget and wanted > budget:
                report(
                    f"{at}: at its maximum {maximum:g} x {each:g} {resource} = {wanted:g}, over this stack's "
                    f"accelerator budget of {budget:g}",
                    scaler.urn,
                )


def _selects_accelerators(spec: Any) -> bool:
    if pod_accelerators(spec):
        return True
    selector, terms = _selected_labels(spec)
    keys = list(selector) + [k for term in terms for k, _ in term]
    values = dict(selector)
    for term in terms:
        for k, vs in term:
            values.setdefault(k, ",".join(vs))
    for key in keys:
        if key.startswith(ACCELERATOR_KEYS):
            return True
        if key == POOL_ACCELERATOR_LABEL and values.get(key):
            return True
        if key == INSTANCE_TYPE_LABEL and any(
            t in catalog.CATALOG and catalog.CATALOG[t].is_accelerated for t in values.get(key, "").split(",")
        ):
            return True
    return any(str(get(t, "key", "")).startswith(ACCELERATOR_KEYS) for t in as_list(get(spec, "tolerations")))


def _job_bounds(job: Any, what: str, report: ReportViolation) -> None:
    if not get(job, "activeDeadlineSeconds"):
        report(f"{what} on accelerator nodes: activeDeadlineSeconds is unset; a hung run holds them")
    backoff = get(job, "backoffLimit")
    if backoff is None or _number(backoff) > MAX_BACKOFF_LIMIT:
        shown = "unset" if backoff is None else f"{_number(backoff):g}"
        report(f"{what} on accelerator nodes: backoffLimit {shown} (at most {MAX_BACKOFF_LIMIT})")


def _pods_bounded(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == SCALED_JOB:
        job = get(args.props, "spec.jobTargetRef") or {}
        if _selects_accelerators(get(job, "template.spec") or {}):
            _job_bounds(job, "ScaledJob jobTargetRef", report)
    elif args.resource_type == CRON_JOB:
        job = get(args.props, "spec.jobTemplate.spec") or {}
        if not _selects_accelerators(get(job, "template.spec") or {}):
            return
        policy = get(args.props, "spec.concurrencyPolicy", "Allow")
        if policy not in ("Forbid", "Replace"):
            report(f"CronJob on accelerator nodes: concurrencyPolicy {policy} stacks overlapping runs on them")
        _job_bounds(job, "CronJob jobTemplate", report)
    elif args.resource_type == POD:
        spec = get(args.props, "spec") or {}
        if _selects_accelerators(spec) and not get(spec, "activeDeadlineSeconds"):
            report(
                "bare Pod on accelerator nodes without activeDeadlineSeconds: no controller bounds or scales it; "
                "run it as a Job (jobs-bounded) or a rollout"
            )


POLICIES = [
    StackValidationPolicy(
        name="autoscaling-within-accelerator-capacity",
        description="ScaledObjects, HPAs and ScaledJobs of accelerator workloads cannot ask at their maximum for "
        "more accelerators than their pools hold or the stack's budget.",
        validate=_within_capacity,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={"maxAccelerators": {"type": "integer", "default": 0, "minimum": 0}}
        ),
    ),
    ResourceValidationPolicy(
        name="accelerator-pods-bounded",
        description="CronJobs, KEDA ScaledJobs and bare Pods on accelerator nodes are bounded (no overlapping "
        "runs, deadlines, backoff limits).",
        validate=_pods_bounded,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
