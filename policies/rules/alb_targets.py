"""ALB target rule: whatever an ALB sends requests to keeps its idle connections open longer than the ALB does.

- ``alb-targets-outlive-idle-timeout``: for every Ingress of an AWS Load Balancer Controller class (an
  IngressClass of controller ``ingress.k8s.aws/alb``), the ALB's idle timeout is the class's IngressClassParams
  ``idle_timeout.timeout_seconds`` (else the Ingress's ``load-balancer-attributes`` annotation, else AWS's 60 s);
  each backend Service of the Ingress must keep idle client connections longer:
  - an Envoy Gateway proxy Service (the ``envoyService.name`` of an EnvoyProxy in the stack) by the
    ``timeout.http.idleTimeout`` of the ClientTrafficPolicy on the Gateway that EnvoyProxy parametrizes
    (unset: Envoy Gateway v1.9.0's default of 1 hour, ``api/v1alpha1/timeout_types.go`` ``HTTPClientTimeout``);
  - any other Service by the seconds it declares in its ``inference.platform/idle-timeout-seconds`` annotation
    (the pack cannot read an application's keep-alive: a Service that declares none is reported).

Why: AWS recommends "that you configure the idle timeout of your application to be larger than the idle timeout
configured for the load balancer. Otherwise, if the application closes the TCP connection to the load balancer
ungracefully, the load balancer might send a request to the application before it receives the packet
indicating that the connection is closed. If this is the case, then the load balancer sends an HTTP 502 Bad
Gateway error to the client" (Elastic Load Balancing user guide, "Edit attributes for your Application Load
Balancer", Connection idle timeout). Equal timers race: strictly longer.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.rate_limit_service import duration_ms

INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"
INGRESS_CLASS = "kubernetes:networking.k8s.io/v1:IngressClass"
INGRESS_CLASS_PARAMS = "kubernetes:elbv2.k8s.aws/v1beta1:IngressClassParams"
ENVOY_PROXY = "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyProxy"
GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
CLIENT_TRAFFIC_POLICY = "kubernetes:gateway.envoyproxy.io/v1alpha1:ClientTrafficPolicy"
SERVICE = "kubernetes:core/v1:Service"
ALB_CONTROLLER = "ingress.k8s.aws/alb"
ALB_DEFAULT_IDLE_SECONDS = 60
"""AWS: "By default, ELB sets the idle timeout value for your load balancer to 60 seconds"."""
ENVOY_GATEWAY_DEFAULT_IDLE_SECONDS = 3600
"""ClientTrafficPolicy ``timeout.http.idleTimeout`` unset: "Default: 1 hour" (Envoy Gateway v1.9.0)."""
IDLE_ANNOTATION = "inference.platform/idle-timeout-seconds"
ATTRIBUTES_ANNOTATION = "alb.ingress.kubernetes.io/load-balancer-attributes"
IDLE_ATTRIBUTE = "idle_timeout.timeout_seconds"


def _of(resources: list[Any], kind: str) -> list[Any]:
    return [r for r in resources if r.resource_type == kind]


def _name(resource: Any) -> str:
    return str(get(resource.props, "metadata.name") or resource.name)


def _namespace(resource: Any) -> str:
    return str(get(resource.props, "metadata.namespace") or "default")


def _seconds(text: Any) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def _class_idle(resources: list[Any]) -> dict[str, int | None]:
    """ALB ingress class name -> the idle timeout its IngressClassParams pins (None: not pinned there)."""
    params = {_name(p): p for p in _of(resources, INGRESS_CLASS_PARAMS)}
    out: dict[str, int | None] = {}
    for cls in _of(resources, INGRESS_CLASS):
        if get(cls.props, "spec.controller") != ALB_CONTROLLER:
            continue
        found = params.get(str(get(cls.props, "spec.parameters.name") or ""))
        idle = None
        if found is not None:
            for attribute in as_list(get(found.props, "spec.loadBalancerAttributes")):
                if get(attribute, "key") == IDLE_ATTRIBUTE:
                    idle = _seconds(get(attribute, "value"))
        out[_name(cls)] = idle
    return out


def _annotation_idle(ingress: Any) -> int | None:
    try:
        text = str((get(ingress.props, "metadata.annotations") or {}).get(ATTRIBUTES_ANNOTATION) or "")
    except UnknownValueError:
        return None
    for pair in text.split(","):
        key, _, value = pair.strip().partition("=")
        if key == IDLE_ATTRIBUTE:
            return _seconds(value)
    return None


def _backends(ingress: Any) -> list[str]:
    spec = get(ingress.props, "spec") or {}
    names = [get(spec, "defaultBackend.service.name")]
    for rule in as_list(get(spec, "rules")):
        names += [get(p, "backend.service.name") for p in as_list(get(rule, "http.paths"))]
    return sorted({str(n) for n in names if n})


def _proxy_idle(resources: list[Any]) -> dict[tuple[str, str], tuple[int, str]]:
    """(namespace, Service) of each Envoy Gateway proxy -> (its client idle timeout in s, where that is set)."""
    policies: dict[tuple[str, str], Any] = {}
    for ctp in _of(resources, CLIENT_TRAFFIC_POLICY):
        for ref in as_list(get(ctp.props, "spec.targetRefs")):
            if get(ref, "kind") == "Gateway":
                policies[(_namespace(ctp), str(get(ref, "name")))] = ctp
    gateways_by_params: dict[tuple[str, str], list[str]] = {}
    for gateway in _of(resources, GATEWAY):
        ref = get(gateway.props, "spec.infrastructure.parametersRef") or {}
        if get(ref, "kind") == "EnvoyProxy":
            gateways_by_params.setdefault((_namespace(gateway), str(get(ref, "name"))), []).append(_name(gateway))
    out: dict[tuple[str, str], tuple[int, str]] = {}
    for proxy in _of(resources, ENVOY_PROXY):
        service = get(proxy.props, "spec.provider.kubernetes.envoyService.name")
        for gateway in gateways_by_params.get((_namespace(proxy), _name(proxy)), []):
            ctp = policies.get((_namespace(proxy), gateway))
            idle_text = get(ctp.props, "spec.timeout.http.idleTimeout") if ctp is not None else None
            if idle_text is None:
                idle, where = ENVOY_GATEWAY_DEFAULT_IDLE_SECONDS, f"Gateway {gateway} (Envoy Gateway's default 1 h)"
            else:
                ms = duration_ms(str(idle_text))
                idle = (ms // 1000) if ms is not None else 0
                where = f"ClientTrafficPolicy {_name(ctp)} idleTimeout {idle_text}"
            if service:
                out[(_namespace(proxy), str(service))] = (idle, where)
    return out


def _declared(resources: list[Any]) -> dict[tuple[str, str], int | None]:
    out = {}
    for service in _of(resources, SERVICE):
        try:
            value = (get(service.props, "metadata.annotations") or {}).get(IDLE_ANNOTATION)
        except UnknownValueError:
            continue
        out[(_namespace(service), _name(service))] = _seconds(value) if value is not None else None
    return out


def _targets_outlive(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = list(args.resources)
    classes = _class_idle(resources)
    proxies = _proxy_idle(resources)
    declared = _declared(resources)
    for ingress in _of(resources, INGRESS):
        cls = str(get(ingress.props, "spec.ingressClassName") or "")
        if cls not in classes:
            continue
        alb_idle = classes[cls] or _annotation_idle(ingress) or ALB_DEFAULT_IDLE_SECONDS
        namespace = _namespace(ingress)
        for backend in _backends(ingress):
            at = f"Ingress {namespace}/{_name(ingress)} -> Service {backend}"
            if (namespace, backend) in proxies:
                idle, where = proxies[(namespace, backend)]
                if idle <= alb_idle:
                    report(
                        f"{at}: the Envoy proxies close idle client connections after {idle} s ({where}), not "
                        f"longer than the ALB's idle timeout of {alb_idle} s; the ALB then sends requests on "
                        "connections the proxy has closed and answers 502 (AWS: the target's idle timeout must be "
                        "larger than the load balancer's)",
                        ingress.urn,
                    )
                continue
            declared_idle = declared.get((namespace, backend))
            if declared_idle is None:
                report(
                    f"{at}: a target behind an ALB whose connection idle timeout the pack cannot see; annotate the "
                    f"Service with {IDLE_ANNOTATION} (its keep-alive, longer than the ALB's {alb_idle} s) or route "
                    "it through the gateway",
                    ingress.urn,
                )
            elif declared_idle <= alb_idle:
                report(
                    f"{at}: keeps idle connections {declared_idle} s ({IDLE_ANNOTATION}), not longer than the ALB's "
                    f"{alb_idle} s idle timeout: occasional 502s",
                    ingress.urn,
                )


POLICIES = [
    StackValidationPolicy(
        name="alb-targets-outlive-idle-timeout",
        description="Every target an ALB Ingress sends to keeps idle connections longer than the ALB's idle "
        "timeout (AWS: else occasional 502s).",
        validate=_targets_outlive,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
