"""Recording rules and alerts as code: the PrometheusRule groups of one inference workload.

Pure: :func:`rule_groups` returns the ``spec.groups`` of a ``monitoring.coreos.com/v1`` PrometheusRule
(the same shape as a Prometheus rules file, which :func:`rules_file` gives for ``promtool``). Every
alert carries ``severity`` (``critical`` pages, ``warning`` tickets) and a ``runbook_url`` pointing at
its section of ``docs/runbooks.md``; thresholds are :class:`AlertThresholds`, filled from the stack's
SLOs and probe budgets by the program.

Sources: NVIDIA's Triton autoscaling tutorial for ``triton:queue_compute:ratio``; DCGM's XID field is a
gauge of the LAST XID (so the alert fires on a change, not on a non-zero value that stays forever);
kube-state-metrics and Envoy metric names as their projects publish them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from inference_platform.catalog import endpoint_picker as picker
from inference_platform.catalog.alert_thresholds import AlertThresholds
from inference_platform.catalog.token_limits import TokenWeights
from inference_platform.components.observability import promql as q
from inference_platform.components.observability.alerting import SEVERITIES as SEVERITIES
from inference_platform.components.observability.alerting import alert
from inference_platform.components.observability.promql import Scope
from inference_platform.components.observability.token_rules import TokenMeter, token_rule_groups

PICKER_BLIND_ERRORS_PER_SECOND = 1.0
"""Poll and extract errors a second, over 5 minutes, past which the picker is blind (one blind replica: ~20)."""
PICKER_FAILURE_RATIO = 0.05
"""Share of the picker's scheduling attempts that may fail (no endpoint found) before it is a ticket."""

Vendor = Literal["nvidia", "neuron"]
DEFAULT_RUNBOOK_BASE = "docs/runbooks.md"


@dataclass(frozen=True, kw_only=True)
class RuleSet:
    """Everything the rules of one workload depend on."""

    scope: Scope
    """Required. Whose series the rules read."""
    vendor: Vendor = "nvidia"
    """Default ``nvidia``: DCGM alerts; ``neuron``: neuron-monitor alerts."""
    hpa: str | None = None
    """Default unset (no waste alert). The HorizontalPodAutoscaler KEDA made (``keda-hpa-<ScaledObject>``)."""
    expect_serving: bool = True
    """Default ``true``: the workload's minimum replicas is above 0, so a missing target is an outage."""
    edge_clusters: str | None = None
    """Default unset (no edge alerts). Regex of the Envoy clusters in front of the workload
    (Envoy Gateway names them ``httproute/<namespace>/<route>/rule/<n>``)."""
    thresholds: AlertThresholds = field(default_factory=AlertThresholds)
    endpoint_picker: str | None = None
    """Default unset (no picker alert). The endpoint picker's Deployment (``edge.routing: inference-pool``, issue 29):
    its pods are ``<name>-<hash>-<id>`` in the scope's namespace."""
    token_meters: tuple[TokenMeter, ...] = ()
    """Default none (no charged-vs-served rules). Where the edge's charges of each metered client are counted
    (``token_rules``, issue 30)."""
    token_weights: TokenWeights = field(default_factory=TokenWeights)
    """Default 1 each. What the edge charges per kind of token (``edge.tokenLimits.weights``): the served side of
    the charged-vs-served rules is weighted alike."""
    runbook_base: str = DEFAULT_RUNBOOK_BASE
    """Default ``docs/runbooks.md``. Each alert's ``runbook_url`` is ``<base>#<alert name, lower case>``."""


class RuleError(ValueError):
    pass


def rule_groups(rules: RuleSet) -> list[dict[str, Any]]:
    """The PrometheusRule ``spec.groups``: recording rules first, then the alerts by area."""
    problems = rules.thresholds.problems()
    if rules.vendor not in ("nvidia", "neuron"):
        problems.append(f"vendor={rules.vendor!r} must be nvidia or neuron")
    if problems:
        raise RuleError("invalid alert settings: " + "; ".join(problems))
    name = f"{rules.scope.namespace}-{rules.scope.job}"
    groups = [
        {"name": f"{name}.recording", "rules": recording_rules(rules.scope)},
        {"name": f"{name}.serving", "rules": _serving_alerts(rules)},
        {"name": f"{name}.pods", "rules": _pod_alerts(rules)},
        {"name": f"{name}.accelerators", "rules": _accelerator_alerts(rules)},
        {"name": f"{name}.nodes", "rules": _node_alerts(rules)},
    ]
    if rules.edge_clusters:
        groups.append({"name": f"{name}.edge", "rules": _edge_alerts(rules)})
    if rules.endpoint_picker is not None:
        groups.append({"name": f"{name}.endpoint-picker", "rules": _picker_alerts(rules)})
    groups += token_rule_groups(name, rules.scope, rules.token_meters, rules.runbook_base, rules.token_weights)
    return [g for g in groups if g["rules"]]


def rules_file(groups: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A Prometheus rules file (what ``promtool check rules`` reads) holding ``groups``."""
    return {"groups": list(groups)}


def alert_names(groups: Sequence[dict[str, Any]]) -> list[str]:
    return [r["alert"] for g in groups for r in g["rules"] if "alert" in r]


def recording_rules(scope: Scope) -> list[dict[str, Any]]:
    sel = scope.selector()
    served = "namespace, job, model_name"
    rules = [
        # NVIDIA's rule, verbatim but for the workload's selector: per model and pod, no aggregation.
        {
            "record": q.QUEUE_COMPUTE_RATIO,
            "expr": f"rate({q.QUEUE_DURATION_US}{sel}[1m]) / clamp_min(rate({q.COMPUTE_INFER_DURATION_US}{sel}[1m]), 1)",
        },
        {
            "record": q.REQUESTS_IN_FLIGHT,
            "expr": f"sum by (namespace, job) ({scope.request_metrics}{scope.selector(model=scope.llm_model, request_type='=~active|waiting')})",
        },
        # Time to first token as clients see it: the OpenAI server's histogram, from each request's arrival.
        {"record": q.TTFT_P95_SECONDS, "expr": q.server_quantile(q.TTFT_SECONDS, 0.95, scope, "5m")},
        {
            "record": q.QUEUE_SECONDS_PER_REQUEST,
            "expr": (
                f"sum by ({served}) (rate({q.QUEUE_SECONDS}_sum{sel}[5m]))"
                f" / clamp_min(sum by ({served}) (rate({q.QUEUE_SECONDS}_count{sel}[5m])), 1e-9)"
            ),
        },
        {
            "record": q.INTER_TOKEN_SECONDS,
            "expr": q.server_quantile(q.INTER_TOKEN_SECONDS_HISTOGRAM, 0.95, scope, "5m"),
        },
        {
            "record": q.OUTPUT_TOKENS_PER_SECOND,
            "expr": f"sum by (namespace, job) (rate({q.GENERATION_TOKENS}{sel}[5m]))",
        },
        {
            "record": q.PREFIX_CACHE_HIT_RATIO,
            "expr": (
                f"sum by (namespace, job) (rate({q.PREFIX_CACHE_HITS}{sel}[5m]))"
                f" / clamp_min(sum by (namespace, job) (rate({q.PREFIX_CACHE_QUERIES}{sel}[5m])), 1e-9)"
            ),
        },
    ]
    if scope.has_kv_cache_metrics:
        rules.append(
            {
                "record": q.KV_CACHE_UTILISATION,
                "expr": (
                    f"sum by (namespace, job, pod) ({q.TRT_LLM_KV_CACHE}{scope.selector(model=scope.llm_model, kv_cache_block_type='used')})"
                    f" / clamp_min(sum by (namespace, job, pod) ({q.TRT_LLM_KV_CACHE}{scope.selector(model=scope.llm_model, kv_cache_block_type='max')}), 1)"
                ),
            }
        )
    return rules


def _serving_alerts(rules: RuleSet) -> list[dict[str, Any]]:
    s, t, rb = rules.scope, rules.thresholds, rules.runbook_base
    out = []
    if rules.expect_serving:
        out.append(
            alert(
                "TritonTargetAbsent",
                f"absent({q.UP}{s.selector()} == 1)",
                for_="5m",
                severity="critical",
                summary=f"No Triton target of {s.namespace}/{s.job} is up",
                description="Prometheus scrapes no healthy Triton metrics endpoint: the service is down or unmonitored.",
                runbook_base=rb,
            )
        )
    out += [
        alert(
            "InferenceRequestsWaiting",
            f"sum by (namespace, job) ({s.request_metrics}{s.selector(model=s.llm_model, request_type='waiting')})"
            f" / clamp_min(count by (namespace, job) ({s.request_metrics}{s.selector(model=s.llm_model, request_type='max')}), 1)"
            f" > {t.waiting_per_replica:g}",
            for_="10m",
            severity="warning",
            summary="Requests wait for a batch slot",
            description=f"More than {t.waiting_per_replica:g} waiting requests per replica for 10 minutes "
            "({{ $value | humanize }}): scaling is not keeping up or is at its maximum.",
            runbook_base=rb,
        ),
        alert(
            "InferenceQueueTimeHigh",
            f"{q.QUEUE_SECONDS_PER_REQUEST}{s.selector()} > {t.queue_seconds:g}",
            for_="10m",
            severity="warning",
            summary="Requests queue in the engine",
            description=f"Model {{{{ $labels.model_name }}}} keeps requests {{{{ $value | humanizeDuration }}}} in "
            f"the engine's queue on average (threshold {t.queue_seconds:g} s).",
            runbook_base=rb,
        ),
        alert(
            "TimeToFirstTokenP95AboveSlo",
            f"{q.TTFT_P95_SECONDS}{s.selector()} > {t.ttft_p95_seconds:g}",
            for_="10m",
            severity="warning",
            summary="p95 time to first token above the SLO",
            description=f"p95 TTFT of {{{{ $labels.model_name }}}} is {{{{ $value | humanizeDuration }}}} "
            f"(SLO {t.ttft_p95_seconds:g} s), measured by the OpenAI server from each request's arrival.",
            runbook_base=rb,
        ),
        alert(
            "InterTokenLatencyAboveSlo",
            f"{q.INTER_TOKEN_SECONDS}{s.selector()} > {t.itl_seconds:g}",
            for_="10m",
            severity="warning",
            summary="Inter-token latency above the SLO",
            description=f"p95 inter-token latency of {{{{ $labels.model_name }}}} is {{{{ $value | humanizeDuration }}}}"
            f", above the SLO of {t.itl_seconds:g} s.",
            runbook_base=rb,
        ),
    ]
    if s.has_kv_cache_metrics:
        out.append(
            alert(
                "KvCacheNearlyFull",
                f"{q.KV_CACHE_UTILISATION}{s.selector()} > {t.kv_cache_ratio:g}",
                for_="5m",
                severity="warning",
                summary="KV cache nearly full",
                description=f"Pod {{{{ $labels.pod }}}} uses {{{{ $value | humanizePercentage }}}} of its KV-cache "
                f"blocks (threshold {t.kv_cache_ratio:.0%}): requests will be paused or evicted.",
                runbook_base=rb,
            )
        )
    return out


def _pod_alerts(rules: RuleSet) -> list[dict[str, Any]]:
    s, t, rb = rules.scope, rules.thresholds, rules.runbook_base
    pod_labels = {"namespace": s.namespace, "pod": f"=~{s.job}-.*"}
    pods = q.selector(pod_labels)
    oom = q.selector({**pod_labels, "reason": "OOMKilled"})
    crash = q.selector({**pod_labels, "reason": "CrashLoopBackOff"})
    not_ready = q.selector({**pod_labels, "condition": "false"})
    return [
        alert(
            "InferenceContainerOOMKilled",
            f"(increase({q.CONTAINER_RESTARTS}{pods}[10m]) > 0)"
            f" and on (namespace, pod, container) ({q.CONTAINER_LAST_TERMINATED}{oom} == 1)",
            for_="0m",
            severity="critical",
            summary="An inference container was OOM-killed",
            description="Container {{ $labels.container }} of {{ $labels.pod }} restarted after running out of "
            "memory: raise inference.resources.memoryGib or lower the batch / KV-cache settings.",
            runbook_base=rb,
        ),
        alert(
            "InferencePodCrashLooping",
            f"max_over_time({q.CONTAINER_WAITING}{crash}[5m]) >= 1 or increase({q.CONTAINER_RESTARTS}{pods}[30m]) >= 3",
            for_="15m",
            severity="warning",
            summary="An inference pod restarts in a loop",
            description="{{ $labels.pod }} keeps restarting (CrashLoopBackOff or 3+ restarts in 30 min).",
            runbook_base=rb,
        ),
        alert(
            "InferencePodNotReady",
            f"sum by (namespace, pod) ({q.POD_READY}{not_ready}) > 0",
            for_=t.not_ready_for,
            severity="warning",
            summary="An inference pod stays not ready",
            description=f"{{{{ $labels.pod }}}} has not been ready for {t.not_ready_for}, longer than a model load.",
            runbook_base=rb,
        ),
    ]


def _accelerator_alerts(rules: RuleSet) -> list[dict[str, Any]]:
    t, rb = rules.thresholds, rules.runbook_base
    out = []
    if rules.vendor == "nvidia":
        utilisation = f"avg({q.GPU_UTIL}) / 100"
        xid = q.GPU_XID_LAST
        out.append(
            alert(
                "GpuXidError",
                # The gauge keeps the last XID: a change (or a new non-zero series) is a new error.
                f"{xid} and (changes({xid}[10m]) > 0) or ({xid} > 0 unless {xid} offset 10m)",
                for_="0m",
                severity="critical",
                summary="GPU reported an XID error",
                description="GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported XID {{ $value }} "
                "(48, 63, 64, 74, 79, 94, 95 mean the GPU or node must be drained).",
                runbook_base=rb,
            )
        )
    else:
        utilisation = f"avg({q.NEURONCORE_UTIL_RATIO})"
        mem, sram = q.NEURON_ECC_UNCORRECTED
        out.append(
            alert(
                "NeuronUncorrectedEccError",
                f"changes({mem}[10m]) > 0 or changes({sram}[10m]) > 0",
                for_="0m",
                severity="critical",
                summary="Neuron device reported uncorrected ECC errors",
                description="Neuron device {{ $labels.neuron_device_index }} on {{ $labels.instance_id }} "
                "counted new uncorrected ECC events: drain the node.",
                runbook_base=rb,
            )
        )
    if rules.hpa is not None:
        hpa = q.selector({"namespace": rules.scope.namespace, "horizontalpodautoscaler": rules.hpa})
        out.append(
            alert(
                "AcceleratorsUnderutilised",
                f"({utilisation} < {t.utilisation_floor:g})"
                f" and on () ({q.HPA_CURRENT}{hpa} > on (namespace, horizontalpodautoscaler) {q.HPA_MIN}{hpa})",
                for_=t.waste_for,
                severity="warning",
                summary="Accelerators idle while scaled above the minimum",
                description=f"Accelerator utilisation {{{{ $value | humanizePercentage }}}} stayed below "
                f"{t.utilisation_floor:.0%} for {t.waste_for} with more replicas than the minimum: scale-down is "
                "stuck or the scaling target is too low.",
                runbook_base=rb,
            )
        )
    return out


def _node_alerts(rules: RuleSet) -> list[dict[str, Any]]:
    rb = rules.runbook_base
    return [
        alert(
            "AcceleratorNodeNotReady",
            f'({q.NODE_READY}{{condition="Ready",status!="true"}} == 1)'
            f' and on (node) {q.NODE_LABELS}{{label_accelerator=~"nvidia|neuron"}}',
            for_="5m",
            severity="critical",
            summary="An accelerator node is not Ready",
            description="Node {{ $labels.node }} (accelerator pool) has not been Ready for 5 minutes.",
            runbook_base=rb,
        ),
        alert(
            "NodeProvisioningFailing",
            f'sum(increase({q.KARPENTER_LAUNCH_FAILURES}{{method="Create"}}[15m])) > 0'
            f" or sum(increase({q.CLUSTER_AUTOSCALER_FAILED_SCALE_UPS}[15m])) > 0",
            for_="15m",
            severity="warning",
            summary="Nodes cannot be provisioned",
            description="Karpenter or the Cluster Autoscaler keeps failing to launch nodes (capacity, quota or "
            "reservation): pending pods wait.",
            runbook_base=rb,
        ),
    ]


def _picker_alerts(rules: RuleSet) -> list[dict[str, Any]]:
    """The endpoint picker serves no pick, or a poor one. The edge fails open, so these are tickets, not pages:
    requests go on, by least request or by a pick made on stale scores.

    - no picker pod ready (kube-state-metrics);
    - blind: it cannot read the replicas' queue and KV-cache gauges (``/metrics`` unreadable, or a family its engine
      type names is missing), so it scores on stale values. It polls each replica every 50 ms (llm-d-router v0.10.0
      ``pkg/epp/server/options.go`` ``RefreshMetricsInterval``), so one blind replica makes ~20 errors a second; a
      replica's restart makes a few seconds of them, under the threshold over 5 minutes;
    - failing: more than ``PICKER_FAILURE_RATIO`` of its picks found no endpoint;
    - slow: its p99 from a request's receipt to its pick passes half the gateway's ext_proc ``messageTimeout``,
      beyond which the gateway stops waiting and the request goes on unpicked.
    """
    ready = q.selector(
        {"namespace": rules.scope.namespace, "pod": f"=~{rules.endpoint_picker}-.*", "condition": "true"}
    )
    assert rules.endpoint_picker is not None  # the caller adds this group only with a picker
    own = {"namespace": rules.scope.namespace, "job": rules.endpoint_picker}
    errors = " + ".join(
        f"sum(rate({family}{q.selector(own)}[5m]))"
        for family in (picker.DATALAYER_POLL_ERRORS, picker.DATALAYER_EXTRACT_ERRORS)
    )
    attempts = f"sum(rate({picker.SCHEDULER_ATTEMPTS}{q.selector(own)}[10m]))"
    failures = f"sum(rate({picker.SCHEDULER_ATTEMPTS}{q.selector({**own, 'status': 'failure'})}[10m]))"
    slow = picker.MESSAGE_TIMEOUT_S / 2
    p99 = f"histogram_quantile(0.99, sum by (le) (rate({picker.REQUEST_PROCESSING}_bucket{q.selector(own)}[10m])))"
    rb = rules.runbook_base
    return [
        alert(
            "EndpointPickerUnavailable",
            f"sum({q.POD_READY}{ready}) == 0 or absent({q.POD_READY}{ready})",
            for_="5m",
            severity="warning",
            summary="The endpoint picker is down: the edge routes by least request",
            description="No endpoint picker pod is ready: the gateway's ext_proc fails open and every request is "
            "balanced by least request, without prefix-cache, queue or KV-cache scoring.",
            runbook_base=rb,
        ),
        alert(
            "EndpointPickerBlind",
            f"({errors}) > {PICKER_BLIND_ERRORS_PER_SECOND:g}",
            for_="10m",
            severity="warning",
            summary="The endpoint picker cannot read the replicas' queue and KV-cache metrics",
            description="The picker keeps failing to read or parse the serving pods' /metrics (poll or extract "
            "errors): its queue and KV-cache scorers work on stale values, and picks pile onto busy replicas.",
            runbook_base=rb,
        ),
        alert(
            "EndpointPickerPicksFailing",
            f"{failures} / clamp_min({attempts}, 1e-9) > {PICKER_FAILURE_RATIO:g}",
            for_="10m",
            severity="warning",
            summary="The endpoint picker finds no endpoint for many requests",
            description=f"More than {PICKER_FAILURE_RATIO:.0%} of the picker's scheduling attempts fail: those "
            "requests go on by least request, without prefix-cache scoring.",
            runbook_base=rb,
        ),
        alert(
            "EndpointPickerSlow",
            f"{p99} > {slow:g}",
            for_="10m",
            severity="warning",
            summary="The endpoint picker's picks near the gateway's timeout",
            description=f"The picker's p99 from a request's receipt to its pick is over {slow:g} s, half the "
            f"gateway's ext_proc messageTimeout ({picker.MESSAGE_TIMEOUT}): past it requests wait, then go on "
            "unpicked.",
            runbook_base=rb,
        ),
    ]


def _edge_alerts(rules: RuleSet) -> list[dict[str, Any]]:
    t, rb = rules.thresholds, rules.runbook_base
    clusters = q.selector({"envoy_cluster_name": f"=~{rules.edge_clusters}"})
    five = q.selector({"envoy_cluster_name": f"=~{rules.edge_clusters}", "envoy_response_code_class": "5"})
    total = f"sum(rate({q.ENVOY_UPSTREAM_RQ_TOTAL}{clusters}[5m]))"
    limited = f"sum(rate({q.ENVOY_RATELIMIT_OVER_LIMIT}{clusters}[5m]))"
    rate_limit_service = q.selector({"envoy_cluster_name": q.RATE_LIMIT_SERVICE_CLUSTER})
    return [
        alert(
            "Edge5xxRateHigh",
            f"sum(rate({q.ENVOY_UPSTREAM_RQ_XX}{five}[5m])) / clamp_min({total}, 1e-9) > {t.edge_5xx_ratio:g}",
            for_="10m",
            severity="critical",
            summary="The edge answers 5xx",
            description=f"{{{{ $value | humanizePercentage }}}} of inference requests fail with 5xx "
            f"(threshold {t.edge_5xx_ratio:.0%}).",
            runbook_base=rb,
        ),
        alert(
            "EdgeRateLimitServiceUnavailable",
            f"sum(rate({q.ENVOY_RATELIMIT_ERROR}{clusters}[5m])) > 0"
            f" or sum({q.ENVOY_CLUSTER_MEMBERSHIP_HEALTHY}{rate_limit_service}) == 0",
            for_="5m",
            severity="critical",
            summary="The gateway has no rate-limit service",
            description="The gateway's rate-limit service does not answer (no healthy host, or calls failing): "
            "per-client limits are not enforced (edge.rateLimits.failClosed false) or requests are refused "
            "with 500 (true).",
            runbook_base=rb,
        ),
        alert(
            "Edge429RateHigh",
            f"{limited} / clamp_min({total} + {limited}, 1e-9) > {t.edge_429_ratio:g}",
            for_="15m",
            severity="warning",
            summary="Many requests are rate-limited",
            description=f"{{{{ $value | humanizePercentage }}}} of inference requests are refused with 429 "
            f"(threshold {t.edge_429_ratio:.0%}): a client exceeds its limit or limits are too low.",
            runbook_base=rb,
        ),
    ]
