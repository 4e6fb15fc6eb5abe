"""Envoy Gateway feature rule: every gated feature the stack's gateway objects use is switched on in the
controller that builds them.

- ``envoy-gateway-features-enabled``: for each Gateway API / Envoy Gateway object of the stack (and each Secret
  of the SDS type), every feature it uses (``catalog.envoy_gateway_gates.FEATURES``: Lua, Backend,
  EnvoyPatchPolicy, global rate limits, SDS Secret references, custom backends) is enabled in the
  ``config.envoyGateway`` values of an Envoy Gateway Helm release of the stack (chart ``gateway-helm``, merged
  over the chart's defaults), that configuration is one the controller starts with (``disableLua`` and
  ``enableLua`` never equal), and no EnvoyExtensionPolicy uses an extension the table does not model.
  Objects using gated features in a stack with no such release are reported too: nothing shows them enabled.

Why: Envoy Gateway v1.9.0 leaves Lua off by default, and a Lua EnvoyExtensionPolicy it cannot build turns every
route it targets into a 500 direct response (``internal/gatewayapi/envoyextensionpolicy.go``); the other
switches refuse their objects as quietly (the catalog module cites each). The plan shows the objects as valid
custom resources either way: only the controller's configuration says whether they will work. The local Envoy
renders the same filters straight into a bootstrap and refuses what this rule refuses
(``inferctl.serving.edge_envoy``). Pinned in tests/catalog/test_envoy_gateway_gates.py.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from inference_platform.catalog.envoy_gateway_gates import config_problems, merged_config, use_problems, uses
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_document, get
from inference_platform.policies.rules.helm import HELM_INSTALLS

ENVOY_GATEWAY_CHART = "gateway-helm"
GROUPS = ("gateway.envoyproxy.io", "gateway.networking.k8s.io")
SECRET = "kubernetes:core/v1:Secret"


def _chart(props: Any) -> str:
    return str(get(props, "chart") or "").rstrip("/").rsplit("/", 1)[-1]


def _manifest(resource: Any) -> dict[str, Any] | None:
    """The object as ``kubectl apply`` would take it, or None while a preview leaves it unknown."""
    try:
        return as_document(resource.props)
    except UnknownValueError:
        return None


def _controller_configs(resources: list[Any]) -> list[tuple[Any, dict[str, Any]]] | None:
    """(release, merged EnvoyGateway configuration) of each Envoy Gateway release; None when a release's
    values are unknown (a preview: the update's check judges them)."""
    found = []
    for resource in resources:
        if resource.resource_type not in HELM_INSTALLS or _chart(resource.props) != ENVOY_GATEWAY_CHART:
            continue
        try:
            values = as_document(get(resource.props, "values.config.envoyGateway") or {}) or {}
        except UnknownValueError:
            return None
        found.append((resource, merged_config(values)))
    return found


def _objects(resources: list[Any]) -> list[tuple[Any, dict[str, Any]]]:
    out = []
    for resource in resources:
        kind = resource.resource_type
        gateway_object = kind.startswith("kubernetes:") and kind.split(":")[1].split("/")[0] in GROUPS
        if gateway_object or kind == SECRET:
            manifest = _manifest(resource)
            if manifest is not None:
                out.append((resource, manifest))
    return out


def _features_enabled(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = list(args.resources)
    configs = _controller_configs(resources)
    if configs is None:
        return
    for release, config in configs:
        for problem in config_problems(config):
            report(f"Envoy Gateway release {get(release.props, 'name') or release.name}: {problem}", release.urn)
    for resource, manifest in _objects(resources):
        if not configs:
            gated = [f for f in uses([manifest]) if f.feature.gate.kind != "ungated"]
            for found in gated:
                report(
                    f"{found.kind} {found.name} uses {found.feature.name}, gated in Envoy Gateway, and the stack "
                    "installs no Envoy Gateway release whose configuration shows it enabled",
                    resource.urn,
                )
            continue
        # Judged against each release: the object works if one of the stack's controllers builds it.
        per_release = [use_problems([manifest], config) for _, config in configs]
        fewest = min(per_release, key=len)
        for problem in fewest:
            report(problem, resource.urn)


POLICIES = [
    StackValidationPolicy(
        name="envoy-gateway-features-enabled",
        description="Every Envoy Gateway feature the stack's gateway objects use (Lua, Backend, EnvoyPatchPolicy, "
        "global rate limits, SDS Secret references, custom backends) is enabled in its Envoy Gateway release's "
        "configuration, as the pinned version gates it.",
        validate=_features_enabled,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
