"""Observability and autoscaling rules on the objects the metrics pipeline and KEDA receive.

- ``autoscaling-on-llm-signals``: a KEDA ScaledObject never scales on accelerator utilisation (a GPU is
  "busy" at any batch size: NVIDIA's autoscaling tutorial and Google's GKE guidance scale LLM servers
  on queue or batch size) nor on CPU/memory, sets a ceiling, and scales down no faster than
  ``minScaleDownStabilizationSeconds`` (a model load takes minutes).
- ``alerts-have-severity-and-runbook``: every alert of a PrometheusRule carries a ``severity`` label
  (critical, warning or info) and a ``runbook_url`` annotation, so a page says how bad and what to do.
- ``grafana-no-default-admin``: a kube-prometheus-stack or Grafana release never ships a literal admin
  password (the chart's default is ``prom-operator``): the password comes from a file (Secrets Manager
  through the CSI driver) or an existing Secret.
- ``monitors-scoped``: a ServiceMonitor or PodMonitor names the namespaces it scrapes (no ``any: true``),
  so a monitor cannot pull every tenant's endpoints.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.helm import HELM_INSTALLS

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
MONITORS = ("kubernetes:monitoring.coreos.com/v1:ServiceMonitor", "kubernetes:monitoring.coreos.com/v1:PodMonitor")
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
UTILISATION_METRICS = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_SM_ACTIVE",
    "neuroncore_utilization_ratio",
    "neuron_hardware_utilization",
)
RESOURCE_TRIGGERS = ("cpu", "memory")
SEVERITIES = ("critical", "warning", "info")
GRAFANA_CHARTS = ("kube-prometheus-stack", "grafana")
DEFAULT_MIN_SCALE_DOWN_SECONDS = 600


def _llm_signals(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != SCALED_OBJECT:
        return
    minimum = int(args.get_config().get("minScaleDownStabilizationSeconds", DEFAULT_MIN_SCALE_DOWN_SECONDS))
    spec = get(args.props, "spec") or {}
    for i, trigger in enumerate(as_list(get(spec, "triggers"))):
        kind = get(trigger, "type")
        if kind in RESOURCE_TRIGGERS:
            report(f"spec.triggers[{i}]: a {kind} trigger; scale LLM servers on their queue, not on resource use")
        query = str(get(trigger, "metadata.query") or "")
        used = [m for m in UTILISATION_METRICS if m in query]
        if used:
            report(
                f"spec.triggers[{i}]: scales on accelerator utilisation ({', '.join(used)}); use requests in "
                "flight, the queue/compute ratio or KV-cache use"
            )
    formula = str(get(spec, "advanced.scalingModifiers.formula") or "")
    if any(m in formula for m in UTILISATION_METRICS):
        report("spec.advanced.scalingModifiers.formula refers to accelerator utilisation")
    if get(spec, "maxReplicaCount") is None:
        report("spec.maxReplicaCount is unset: KEDA's default (100) is not what the pool holds")
    window = get(spec, "advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds")
    if window is None or window < minimum:
        shown = "unset (the HPA's 300 s)" if window is None else f"{int(window)} s"
        report(f"scale-down stabilisation is {shown}: at least {minimum} s, longer than a model load")


def _alerts_documented(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != PROMETHEUS_RULE:
        return
    for group in as_list(get(args.props, "spec.groups")):
        for rule in as_list(get(group, "rules")):
            name = get(rule, "alert")
            if name is None:
                continue
            at = f"group {get(group, 'name')}, alert {name}"
            if get(rule, "labels.severity") not in SEVERITIES:
                report(f"{at}: label severity is {get(rule, 'labels.severity')!r}; one of {', '.join(SEVERITIES)}")
            if not get(rule, "annotations.runbook_url"):
                report(f"{at}: no runbook_url annotation")


GRAFANA_ADMIN_ENV = (
    "GF_SECURITY_ADMIN_USER",
    "GF_SECURITY_ADMIN_USER__FILE",
    "GF_SECURITY_ADMIN_PASSWORD",
    "GF_SECURITY_ADMIN_PASSWORD__FILE",
)


def _grafana_admin(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in HELM_INSTALLS:
        return
    chart = str(get(args.props, "chart") or "")
    if chart.rsplit("/", 1)[-1] not in GRAFANA_CHARTS:
        return
    values: Any = get(args.props, "values") or {}
    grafana = get(values, "grafana") if chart.endswith("kube-prometheus-stack") else values
    if grafana is None or get(grafana, "enabled") is False:
        return
    env = get(grafana, "env") or {}
    from_secret = get(grafana, "admin.existingSecret")
    if get(grafana, "adminPassword"):
        report("values set a literal Grafana adminPassword; read it from an existing Secret")
    # grafana chart 12.11.1 templates/_pod.tpl: any of these in env drops the sidecars' REQ_USERNAME /
    # REQ_PASSWORD, so their reload calls to Grafana's admin API fail.
    in_env = sorted(k for k in GRAFANA_ADMIN_ENV if get(env, k) is not None)
    if in_env:
        report(
            f"env sets {', '.join(in_env)}: the grafana chart then drops its sidecars' reload credentials "
            "(REQ_USERNAME/REQ_PASSWORD, templates/_pod.tpl at grafana-12.11.1); use admin.existingSecret "
            "with userKey/passwordKey"
        )
    elif not from_secret:
        report(
            "Grafana's admin password is the chart's default (prom-operator or a generated one kept in the "
            "release): set admin.existingSecret (with userKey/passwordKey)"
        )


def _monitors_scoped(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in MONITORS:
        return
    selector = get(args.props, "spec.namespaceSelector") or {}
    if get(selector, "any") or not as_list(get(selector, "matchNames")):
        report("spec.namespaceSelector must name the namespaces it scrapes (matchNames), not any")


POLICIES = [
    ResourceValidationPolicy(
        name="autoscaling-on-llm-signals",
        description="ScaledObjects scale on the LLM's queue/KV signals (never accelerator utilisation), with a "
        "ceiling and a scale-down slower than a model load.",
        validate=_llm_signals,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "minScaleDownStabilizationSeconds": {"type": "integer", "default": DEFAULT_MIN_SCALE_DOWN_SECONDS}
            }
        ),
    ),
    ResourceValidationPolicy(
        name="alerts-have-severity-and-runbook",
        description="Every PrometheusRule alert has a severity label and a runbook_url annotation.",
        validate=_alerts_documented,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="grafana-no-default-admin",
        description="Grafana's admin password never comes from the chart's defaults or a literal value.",
        validate=_grafana_admin,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="monitors-scoped",
        description="ServiceMonitors and PodMonitors name the namespaces they scrape.",
        validate=_monitors_scoped,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
