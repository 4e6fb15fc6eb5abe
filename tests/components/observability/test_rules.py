"""Alerts as code, checked by the real promtool: every rule parses, and every alert has a firing and a
not-firing case evaluated by ``promtool test rules`` on synthetic series."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from inference_platform.components.observability.promql import Scope
from inference_platform.components.observability.rules import (
    AlertThresholds,
    RuleError,
    RuleSet,
    alert_names,
    rule_groups,
    rules_file,
)
from tests.system_tools import require_tool

NS, JOB = "inference", "triton"
SCOPE = Scope(namespace=NS, job=JOB)
EDGE = "httproute/inference/triton/rule/.*"
NVIDIA = RuleSet(scope=SCOPE, hpa="keda-hpa-triton", edge_clusters=EDGE, endpoint_picker="inference-router-epp")
NEURON = RuleSet(scope=Scope(namespace=NS, job=JOB, backend="neuron"), vendor="neuron", hpa="keda-hpa-triton")
W = f'namespace="{NS}",job="{JOB}"'  # what a ServiceMonitor adds to every Triton sample
TRT = f'{W},model="tensorrt_llm",version="1",pod="triton-a"'
SRV = f'{W},model_name="Llama-3.1-8B",client="team-a",pod="triton-a"'  # the OpenAI server's series
KSM = f'job="kube-state-metrics",namespace="{NS}",pod="triton-7d9f-abcde",container="triton"'
ROUTE = 'envoy_cluster_name="httproute/inference/triton/rule/0"'
PICKER = f'namespace="{NS}",job="inference-router-epp"'
"""The picker's own series, as the stack's ServiceMonitor labels them (job: its Service)."""
RATE_LIMIT_CLUSTER = 'envoy_cluster_name="ratelimit_cluster"'  # Envoy Gateway's cluster of its rate-limit service


@dataclass(frozen=True)
class Case:
    alert: str
    firing: list[tuple[str, str]]
    calm: list[tuple[str, str]]
    eval_time: str
    labels: dict[str, str]
    """Labels of the firing alert besides alertname and severity."""
    description: str
    """The rendered description (checks the templates too)."""


CASES = [
    Case(
        "TritonTargetAbsent",
        [(f"up{{{W},pod='triton-a'}}".replace("'", '"'), "0x20")],
        [(f'up{{{W},pod="triton-a"}}', "1x20")],
        "10m",
        {},
        "Prometheus scrapes no healthy Triton metrics endpoint: the service is down or unmonitored.",
    ),
    Case(
        "InferenceRequestsWaiting",
        [
            (f'nv_trt_llm_request_metrics{{{TRT},request_type="waiting"}}', "20x30"),
            (f'nv_trt_llm_request_metrics{{{TRT},request_type="max"}}', "64x30"),
        ],
        [
            (f'nv_trt_llm_request_metrics{{{TRT},request_type="waiting"}}', "2x30"),
            (f'nv_trt_llm_request_metrics{{{TRT},request_type="max"}}', "64x30"),
        ],
        "15m",
        {"namespace": NS, "job": JOB},
        "More than 8 waiting requests per replica for 10 minutes (20): scaling is not keeping up or is at its maximum.",
    ),
    Case(
        "InferenceQueueTimeHigh",
        [
            (f"vllm:request_queue_time_seconds_sum{{{SRV}}}", "0+2x40"),
            (f"vllm:request_queue_time_seconds_count{{{SRV}}}", "0+1x40"),
        ],
        [
            (f"vllm:request_queue_time_seconds_sum{{{SRV}}}", "0+0.1x40"),
            (f"vllm:request_queue_time_seconds_count{{{SRV}}}", "0+1x40"),
        ],
        "20m",
        {"namespace": NS, "job": JOB, "model_name": "Llama-3.1-8B"},
        "Model Llama-3.1-8B keeps requests 2s in the engine's queue on average (threshold 1 s).",
    ),
    Case(
        "KvCacheNearlyFull",
        [
            (f'nv_trt_llm_kv_cache_block_metrics{{{TRT},kv_cache_block_type="used"}}', "97x20"),
            (f'nv_trt_llm_kv_cache_block_metrics{{{TRT},kv_cache_block_type="max"}}', "100x20"),
        ],
        [
            (f'nv_trt_llm_kv_cache_block_metrics{{{TRT},kv_cache_block_type="used"}}', "50x20"),
            (f'nv_trt_llm_kv_cache_block_metrics{{{TRT},kv_cache_block_type="max"}}', "100x20"),
        ],
        "10m",
        {"namespace": NS, "job": JOB, "pod": "triton-a"},
        "Pod triton-a uses 97% of its KV-cache blocks (threshold 95%): requests will be paused or evicted.",
    ),
    Case(
        "TimeToFirstTokenP95AboveSlo",
        [
            (f'vllm:time_to_first_token_seconds_bucket{{{SRV},le="{le}"}}', v)
            for le, v in (("0.5", "0x40"), ("2", "0x40"), ("5", "0+10x40"), ("+Inf", "0+10x40"))
        ],
        [
            (f'vllm:time_to_first_token_seconds_bucket{{{SRV},le="{le}"}}', v)
            for le, v in (("0.5", "0+10x40"), ("2", "0+10x40"), ("5", "0+10x40"), ("+Inf", "0+10x40"))
        ],
        "20m",
        {"namespace": NS, "job": JOB, "model_name": "Llama-3.1-8B"},
        "p95 TTFT of Llama-3.1-8B is 4.85s (SLO 2 s), measured by the OpenAI server from each request's arrival.",
    ),
    Case(
        "InterTokenLatencyAboveSlo",
        [
            (f'vllm:inter_token_latency_seconds_bucket{{{SRV},le="{le}"}}', v)
            for le, v in (("0.05", "0x40"), ("0.1", "0x40"), ("0.2", "0+100x40"), ("+Inf", "0+100x40"))
        ],
        [
            (f'vllm:inter_token_latency_seconds_bucket{{{SRV},le="{le}"}}', v)
            for le, v in (("0.05", "0+100x40"), ("0.1", "0+100x40"), ("0.2", "0+100x40"), ("+Inf", "0+100x40"))
        ],
        "20m",
        {"namespace": NS, "job": JOB, "model_name": "Llama-3.1-8B"},
        "p95 inter-token latency of Llama-3.1-8B is 195ms, above the SLO of 0.1 s.",
    ),
    Case(
        "InferenceContainerOOMKilled",
        [
            (f"kube_pod_container_status_restarts_total{{{KSM}}}", "0 0 0 0 0 1 1 1 1 1 1"),
            (f'kube_pod_container_status_last_terminated_reason{{{KSM},reason="OOMKilled"}}', "0 0 0 0 0 1x6"),
        ],
        [
            (f"kube_pod_container_status_restarts_total{{{KSM}}}", "0 0 0 0 0 1 1 1 1 1 1"),
            (f'kube_pod_container_status_last_terminated_reason{{{KSM},reason="Error"}}', "0 0 0 0 0 1x6"),
        ],
        "6m",
        {"namespace": NS, "pod": "triton-7d9f-abcde", "container": "triton", "job": "kube-state-metrics"},
        "Container triton of triton-7d9f-abcde restarted after running out of memory: raise "
        "inference.resources.memoryGib or lower the batch / KV-cache settings.",
    ),
    Case(
        "InferencePodCrashLooping",
        [(f'kube_pod_container_status_waiting_reason{{{KSM},reason="CrashLoopBackOff"}}', "1x30")],
        [
            (f'kube_pod_container_status_waiting_reason{{{KSM},reason="CrashLoopBackOff"}}', "0x30"),
            (f"kube_pod_container_status_restarts_total{{{KSM}}}", "1x30"),
        ],
        "20m",
        {
            "namespace": NS,
            "pod": "triton-7d9f-abcde",
            "container": "triton",
            "job": "kube-state-metrics",
            "reason": "CrashLoopBackOff",
        },
        "triton-7d9f-abcde keeps restarting (CrashLoopBackOff or 3+ restarts in 30 min).",
    ),
    Case(
        "InferencePodNotReady",
        [(f'kube_pod_status_ready{{{KSM},condition="false"}}', "1x60")],
        # Not ready for 20 minutes (a model load), then ready.
        [(f'kube_pod_status_ready{{{KSM},condition="false"}}', "1x20 0x40")],
        "40m",
        {"namespace": NS, "pod": "triton-7d9f-abcde"},
        "triton-7d9f-abcde has not been ready for 35m, longer than a model load.",
    ),
    Case(
        "GpuXidError",
        [('DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="node-a"}', "0x10 79x20")],
        # An old XID stays in the gauge: no change, no alert.
        [('DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="node-a"}', "79x40")],
        "12m",
        {"gpu": "0", "Hostname": "node-a"},
        "GPU 0 on node-a reported XID 79 (48, 63, 64, 74, 79, 94, 95 mean the GPU or node must be drained).",
    ),
    Case(
        "AcceleratorsUnderutilised",
        [
            ('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="node-a"}', "30x60"),
            (
                f'kube_horizontalpodautoscaler_status_current_replicas{{namespace="{NS}",horizontalpodautoscaler="keda-hpa-triton"}}',
                "3x60",
            ),
            (
                f'kube_horizontalpodautoscaler_spec_min_replicas{{namespace="{NS}",horizontalpodautoscaler="keda-hpa-triton"}}',
                "1x60",
            ),
        ],
        [
            ('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="node-a"}', "30x60"),
            (
                f'kube_horizontalpodautoscaler_status_current_replicas{{namespace="{NS}",horizontalpodautoscaler="keda-hpa-triton"}}',
                "1x60",
            ),
            (
                f'kube_horizontalpodautoscaler_spec_min_replicas{{namespace="{NS}",horizontalpodautoscaler="keda-hpa-triton"}}',
                "1x60",
            ),
        ],
        "40m",
        {},
        "Accelerator utilisation 30% stayed below 70% for 30m with more replicas than the minimum: scale-down is "
        "stuck or the scaling target is too low.",
    ),
    Case(
        "AcceleratorNodeNotReady",
        [
            ('kube_node_status_condition{node="n1",condition="Ready",status="false"}', "1x20"),
            ('kube_node_status_condition{node="n1",condition="Ready",status="true"}', "0x20"),
            ('kube_node_labels{node="n1",label_accelerator="nvidia"}', "1x20"),
        ],
        # A system node (no accelerator label) going NotReady is someone else's alert.
        [
            ('kube_node_status_condition{node="n1",condition="Ready",status="false"}', "1x20"),
            ('kube_node_labels{node="n1"}', "1x20"),
        ],
        "10m",
        {"node": "n1", "condition": "Ready", "status": "false"},
        "Node n1 (accelerator pool) has not been Ready for 5 minutes.",
    ),
    Case(
        "NodeProvisioningFailing",
        [('karpenter_cloudprovider_errors_total{method="Create",error="InsufficientCapacityError"}', "0+1x40")],
        [('karpenter_cloudprovider_errors_total{method="Create",error="InsufficientCapacityError"}', "5x40")],
        "30m",
        {},
        "Karpenter or the Cluster Autoscaler keeps failing to launch nodes (capacity, quota or reservation): "
        "pending pods wait.",
    ),
    Case(
        "Edge5xxRateHigh",
        [
            (f'envoy_cluster_upstream_rq_xx{{{ROUTE},envoy_response_code_class="5"}}', "0+10x30"),
            (f"envoy_cluster_upstream_rq_total{{{ROUTE}}}", "0+100x30"),
        ],
        [
            (f'envoy_cluster_upstream_rq_xx{{{ROUTE},envoy_response_code_class="5"}}', "0+1x30"),
            (f"envoy_cluster_upstream_rq_total{{{ROUTE}}}", "0+100x30"),
        ],
        "20m",
        {},
        "10% of inference requests fail with 5xx (threshold 5%).",
    ),
    # Calls to the rate-limit service fail on traffic (its pods are gone, or never started) ...
    Case(
        "EdgeRateLimitServiceUnavailable",
        [
            (f"envoy_cluster_ratelimit_error{{{ROUTE}}}", "0+10x20"),
            (f"envoy_cluster_membership_healthy{{{RATE_LIMIT_CLUSTER}}}", "1x20"),
        ],
        [
            (f"envoy_cluster_ratelimit_error{{{ROUTE}}}", "3x20"),  # old errors, none new
            (f"envoy_cluster_ratelimit_ok{{{ROUTE}}}", "0+10x20"),
            (f"envoy_cluster_membership_healthy{{{RATE_LIMIT_CLUSTER}}}", "1x20"),
        ],
        "15m",
        {},
        "The gateway's rate-limit service does not answer (no healthy host, or calls failing): per-client limits "
        "are not enforced (edge.rateLimits.failClosed false) or requests are refused with 500 (true).",
    ),
    # ... or, with no traffic at all, its cluster has no healthy host (its Service was never created).
    Case(
        "EdgeRateLimitServiceUnavailable",
        [(f"envoy_cluster_membership_healthy{{{RATE_LIMIT_CLUSTER}}}", "0x20")],
        [(f"envoy_cluster_membership_healthy{{{RATE_LIMIT_CLUSTER}}}", "1x20")],
        "15m",
        {},
        "The gateway's rate-limit service does not answer (no healthy host, or calls failing): per-client limits "
        "are not enforced (edge.rateLimits.failClosed false) or requests are refused with 500 (true).",
    ),
    Case(
        "Edge429RateHigh",
        [
            (f"envoy_cluster_ratelimit_over_limit{{{ROUTE}}}", "0+50x40"),
            (f"envoy_cluster_upstream_rq_total{{{ROUTE}}}", "0+100x40"),
        ],
        [
            (f"envoy_cluster_ratelimit_over_limit{{{ROUTE}}}", "0+5x40"),
            (f"envoy_cluster_upstream_rq_total{{{ROUTE}}}", "0+100x40"),
        ],
        "25m",
        {},
        "33.33% of inference requests are refused with 429 (threshold 20%): a client exceeds its limit or limits "
        "are too low.",
    ),
    Case(
        "EndpointPickerUnavailable",
        [
            (
                f'kube_pod_status_ready{{namespace="{NS}",pod="inference-router-epp-5d8f7-abcde",condition="true"}}',
                "0x20",
            )
        ],
        [
            (
                f'kube_pod_status_ready{{namespace="{NS}",pod="inference-router-epp-5d8f7-abcde",condition="true"}}',
                "1x20",
            )
        ],
        "10m",
        {},
        "No endpoint picker pod is ready: the gateway's ext_proc fails open and every request is balanced by least "
        "request, without prefix-cache, queue or KV-cache scoring.",
    ),
    # One replica the picker cannot parse (~20 errors/s, a poll every 50 ms) fires; a replica's restart (a few
    # seconds of errors, 0.5/s over 5 minutes) does not.
    Case(
        "EndpointPickerBlind",
        [
            (f"llm_d_epp_datalayer_extract_errors_total{{{PICKER},source_type=\"metrics-data-source\"}}", "0+1200x30"),
            (f"llm_d_epp_datalayer_poll_errors_total{{{PICKER},source_type=\"metrics-data-source\"}}", "0x30"),
        ],
        [
            (f"llm_d_epp_datalayer_extract_errors_total{{{PICKER},source_type=\"metrics-data-source\"}}", "0+30x30"),
            (f"llm_d_epp_datalayer_poll_errors_total{{{PICKER},source_type=\"metrics-data-source\"}}", "0x30"),
        ],
        "25m",
        {},
        "The picker keeps failing to read or parse the serving pods' /metrics (poll or extract errors): its queue "
        "and KV-cache scorers work on stale values, and picks pile onto busy replicas.",
    ),
    Case(
        "EndpointPickerPicksFailing",
        [
            (f'llm_d_epp_scheduler_attempts_total{{{PICKER},status="success"}}', "0+900x30"),
            (f'llm_d_epp_scheduler_attempts_total{{{PICKER},status="failure"}}', "0+100x30"),
        ],
        [
            (f'llm_d_epp_scheduler_attempts_total{{{PICKER},status="success"}}', "0+900x30"),
            (f'llm_d_epp_scheduler_attempts_total{{{PICKER},status="failure"}}', "0+10x30"),
        ],
        "25m",
        {},
        "More than 5% of the picker's scheduling attempts fail: those requests go on by least request, without "
        "prefix-cache scoring.",
    ),
    Case(
        "EndpointPickerSlow",
        [(f'llm_d_epp_request_processing_duration_seconds_bucket{{{PICKER},le="{le}"}}', v)
         for le, v in (("1", "0x30"), ("2.5", "0x30"), ("5", "0+100x30"), ("+Inf", "0+100x30"))],
        [(f'llm_d_epp_request_processing_duration_seconds_bucket{{{PICKER},le="{le}"}}', "0+100x30")
         for le in ("1", "2.5", "5", "+Inf")],
        "25m",
        {},
        "The picker's p99 from a request's receipt to its pick is over 2.5 s, half the gateway's ext_proc "
        "messageTimeout (5s): past it requests wait, then go on unpicked.",
    ),
]  # fmt: skip
NVIDIA_ONLY = (
    "EndpointPickerUnavailable",
    "EndpointPickerBlind",
    "EndpointPickerPicksFailing",
    "EndpointPickerSlow",
    "KvCacheNearlyFull",
    "GpuXidError",
    "AcceleratorsUnderutilised",
    "Edge5xxRateHigh",
    "Edge429RateHigh",
    "EdgeRateLimitServiceUnavailable",
)


def _on_neuron(case: Case) -> Case:
    """The same case against the neuron_llm model and its own request gauges."""

    def swap(series: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [
            (
                s.replace('model="tensorrt_llm"', 'model="neuron_llm"').replace(
                    "nv_trt_llm_request_metrics", "neuron_llm_request_metrics"
                ),
                v,
            )
            for s, v in series
        ]

    description = case.description.replace("tensorrt_llm", "neuron_llm")
    labels = {k: ("neuron_llm" if v == "tensorrt_llm" else v) for k, v in case.labels.items()}
    return Case(case.alert, swap(case.firing), swap(case.calm), case.eval_time, labels, description)


NEURON_CASES = [_on_neuron(c) for c in CASES if c.alert not in NVIDIA_ONLY] + [
    Case(
        "NeuronUncorrectedEccError",
        [
            (
                'neurondevice_hw_ecc_events_total_mem_ecc_uncorrected{neuron_device_index="0",instance_id="i-1"}',
                "0x10 1x20",
            )
        ],
        [('neurondevice_hw_ecc_events_total_mem_ecc_uncorrected{neuron_device_index="0",instance_id="i-1"}', "3x40")],
        "12m",
        {"neuron_device_index": "0", "instance_id": "i-1"},
        "Neuron device 0 on i-1 counted new uncorrected ECC events: drain the node.",
    ),
    Case(
        "AcceleratorsUnderutilised",
        [
            ('neuroncore_utilization_ratio{neuroncore="0",instance_id="i-1"}', "0.2x60"),
            (
                f'kube_horizontalpodautoscaler_status_current_replicas{{namespace="{NS}",horizontalpodautoscaler="keda-hpa-triton"}}',
                "2x60",
            ),
            (
                f'kube_horizontalpodautoscaler_spec_min_replicas{{namespace="{NS}",horizontalpodautoscaler="keda-hpa-triton"}}',
                "1x60",
            ),
        ],
        [
            ('neuroncore_utilization_ratio{neuroncore="0",instance_id="i-1"}', "0.9x60"),
            (
                f'kube_horizontalpodautoscaler_status_current_replicas{{namespace="{NS}",horizontalpodautoscaler="keda-hpa-triton"}}',
                "2x60",
            ),
            (
                f'kube_horizontalpodautoscaler_spec_min_replicas{{namespace="{NS}",horizontalpodautoscaler="keda-hpa-triton"}}',
                "1x60",
            ),
        ],
        "40m",
        {},
        "Accelerator utilisation 20% stayed below 70% for 30m with more replicas than the minimum: scale-down is "
        "stuck or the scaling target is too low.",
    ),
]


def _annotations(groups: list[dict[str, Any]], case: Case) -> dict[str, str]:
    rule = next(r for g in groups for r in g["rules"] if r.get("alert") == case.alert)
    return {**rule["annotations"], "description": case.description}


def _tests(groups: list[dict[str, Any]], cases: list[Case]) -> list[dict[str, Any]]:
    severity = {r["alert"]: r["labels"]["severity"] for g in groups for r in g["rules"] if "alert" in r}
    out = []
    for case in cases:
        expected = {"exp_labels": {**case.labels, "severity": severity[case.alert]},
                    "exp_annotations": _annotations(groups, case)}  # fmt: skip
        for series, alerts in ((case.firing, [expected]), (case.calm, [])):
            out.append(
                {
                    "name": f"{case.alert} {'fires' if alerts else 'stays quiet'}",
                    "interval": "1m",
                    "input_series": [{"series": s, "values": v} for s, v in series],
                    "alert_rule_test": [{"eval_time": case.eval_time, "alertname": case.alert, "exp_alerts": alerts}],
                }
            )
    return out


def _run(promtool: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def promtool() -> Path:
    return require_tool("promtool")


@pytest.mark.parametrize(("rule_set", "cases"), [(NVIDIA, CASES), (NEURON, NEURON_CASES)], ids=["nvidia", "neuron"])
def test_every_alert_fires_and_stays_quiet_under_promtool(promtool, tmp_path, rule_set, cases):
    groups = rule_groups(rule_set)
    assert sorted({c.alert for c in cases}) == sorted(alert_names(groups)), "every alert needs a case"
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules_file(groups), sort_keys=False))
    checked = _run(promtool, "check", "rules", "rules.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    suite = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": _tests(groups, cases)}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(suite, sort_keys=False))
    result = _run(promtool, "test", "rules", "tests.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_severity_and_a_runbook_section(repo):
    runbooks = (repo / "docs" / "runbooks.md").read_text()
    anchors = {line.lstrip("# ").strip().lower() for line in runbooks.splitlines() if line.startswith("## ")}
    for rule_set in (NVIDIA, NEURON):
        for group in rule_groups(rule_set):
            for rule in group["rules"]:
                if "alert" not in rule:
                    continue
                assert rule["labels"]["severity"] in ("critical", "warning")
                url = rule["annotations"]["runbook_url"]
                assert url == f"docs/runbooks.md#{rule['alert'].lower()}"
                assert rule["alert"].lower() in anchors, f"docs/runbooks.md has no section for {rule['alert']}"


def test_recording_rules_include_nvidias_queue_compute_ratio():
    recording = {r["record"]: r["expr"] for g in rule_groups(NVIDIA) for r in g["rules"] if "record" in r}
    assert recording["triton:queue_compute:ratio"] == (
        f"rate(nv_inference_queue_duration_us{{{W}}}[1m]) / clamp_min(rate(nv_inference_compute_infer_duration_us{{{W}}}[1m]), 1)"
    )


def test_optional_alerts_follow_the_workload():
    quiet = rule_groups(RuleSet(scope=SCOPE, expect_serving=False))
    names = alert_names(quiet)
    assert "TritonTargetAbsent" not in names and "AcceleratorsUnderutilised" not in names
    assert not any(n.startswith("Edge") for n in names)


@pytest.mark.parametrize(
    ("thresholds", "words"),
    [
        (AlertThresholds(kv_cache_ratio=1.5), "kv_cache_ratio=1.5"),
        (AlertThresholds(ttft_p95_seconds=0), "ttft_p95_seconds=0"),
    ],
)
def test_bad_thresholds_are_refused(thresholds, words):
    with pytest.raises(RuleError, match=words):
        rule_groups(RuleSet(scope=SCOPE, thresholds=thresholds))
