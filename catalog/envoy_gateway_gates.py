"""Which Envoy Gateway features the controller must have switched on before it builds an object that uses them,
read from envoyproxy/gateway at the pinned v1.9.0 (``catalog.edge_charts.ENVOY_GATEWAY``): one row per feature,
so a feature the edge starts to use (token metering's Lua, the scheduler's ext_proc, a Backend) is one more row
here, and every check reads the rows:

- the pack's ``envoy-gateway-features-enabled`` (policies/rules/envoy_gateway_features.py): every feature the
  stack's Gateway API and Envoy Gateway objects use is enabled in the ``config.envoyGateway`` values of the
  stack's Envoy Gateway release;
- ``components.edge.controller_config.controller_values``: the release enables exactly the gated features the
  gateway's own objects use (``enabling_values``), nothing more (EnvoyPatchPolicy and Lua are off by default
  because whoever may write such an object may program the proxies);
- the local Envoy (``inferctl.serving.edge_envoy.render_bootstrap``): it refuses to render a filter whose
  feature the controller's configuration leaves off, as the controller would.

How v1.9.0 gates each (``internal/gatewayapi/runner/runner.go`` builds the translator's switches from the
EnvoyGateway configuration; the translator reads them):

- Lua: ``extensionApis.enableLua`` (``api/v1alpha1/envoygateway_types.go`` ``ExtensionAPISettings.EnableLua``:
  "By default, Lua policies are disabled"); the deprecated ``disableLua`` still counts when ``enableLua`` is
  unset (``api/v1alpha1/envoygateway_helpers.go`` ``LuaDisabled``: no ``extensionApis`` at all is disabled),
  and the two may not hold the same value (``api/v1alpha1/validation/envoygateway_validate.go``: "disableLua
  and enableLua must not have the same value", so ``disableLua: false`` alone stops the controller).
  Disabled, ``buildLuas`` fails ("Skipping Lua EnvoyExtensionPolicy as feature is disabled in the Gateway")
  and every route the policy targets gets a 500 direct response
  (``internal/gatewayapi/envoyextensionpolicy.go``: "setting 500 direct response in routes due to errors in
  EnvoyExtensionPolicy").
- Backend: ``extensionApis.enableBackend``. A ``Backend`` object is not accepted
  (``internal/gatewayapi/backend.go``), a route naming one is refused ("Backend is disabled in Envoy Gateway
  configuration", ``internal/gatewayapi/validate.go`` ``validateBackendRefBackend``), and so is an ext_proc
  or ext_auth service naming one (``internal/gatewayapi/ext_service.go``).
- EnvoyPatchPolicy: ``extensionApis.enableEnvoyPatchPolicy``; otherwise its status says "EnvoyPatchPolicy is
  disabled in the EnvoyGateway configuration" and nothing is patched (``internal/gatewayapi/envoypatchpolicy.go``).
- Global rate limits: ``rateLimit`` present (runner.go ``GlobalRateLimitEnabled: RateLimit != nil``); otherwise
  the BackendTrafficPolicy fails ("enable Ratelimit in the EnvoyGateway config to configure global rateLimit",
  ``internal/gatewayapi/backendtrafficpolicy.go`` ``buildGlobalRateLimit``).
- SDS Secret references: ``extensionApis.enableSDSSecretRef`` for a Secret of type ``gateway.envoyproxy.io/sds``
  (``api/v1alpha1/shared_types.go`` ``SDSSecretType``; ``internal/gatewayapi/validate.go``,
  ``backendtlspolicy.go``).
- Custom backends (an InferencePool behind an extension server): the group and kind must be listed in
  ``extensionManager.backendResources`` (runner.go adds them to ``ExtensionGroupKinds``;
  ``internal/gatewayapi/route.go`` ``isCustomBackendResource``).
- ext_proc and Wasm have no switch of their own at v1.9.0: ``buildExtProc`` only resolves its backendRefs (a
  ``Backend`` among them needs ``enableBackend``, the row above), and the Wasm cache starts with the translator
  runner whatever the configuration (runner.go ``startWasmCache``).
- Dynamic modules are gated by an allow-list in the EnvoyProxy (``buildDynamicModules``: "is not registered in
  the EnvoyProxy dynamicModules allowlist"), not by the controller's configuration: no row models it yet, so
  a policy using one is reported as unmodelled (add a row when the edge needs one).

Pure data and functions over plain dicts (the manifests ``kubectl apply`` takes; the pack converts its
resources to them): nothing here imports Pulumi. Pinned against the tag in
tests/catalog/test_envoy_gateway_gates.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

PINNED_VERSION: Final = "v1.9.0"
ENVOY_GATEWAY_GROUP: Final = "gateway.envoyproxy.io"
SDS_SECRET_TYPE: Final = "gateway.envoyproxy.io/sds"
"""``api/v1alpha1/shared_types.go`` ``SDSSecretType`` at v1.9.0."""

# Chart gateway-helm v1.9.0 values.tmpl.yaml `config.envoyGateway`; templates/envoy-gateway-config.yaml merges the
# release's values over these (Helm's `merge`: the user's keys win).
CHART_DEFAULT_CONFIG: Final[Mapping[str, Any]] = {
    "gateway": {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"},
    "provider": {"type": "Kubernetes"},
    "logging": {"level": {"default": "info"}},
    "extensionApis": {},
}

GateKind = Literal["switch", "configured", "lua", "listed", "ungated"]


@dataclass(frozen=True)
class Use:
    """Where an object uses a feature: objects of ``kind`` whose ``path`` holds a non-empty value (``equals``:
    exactly that value). ``[]`` in a path walks every item of a list; ``kind`` ``*`` matches every kind."""

    kind: str
    path: str
    equals: str | None = None
    group: str | None = None
    """Only objects of this API group (``apiVersion`` before the ``/``); None: any."""


@dataclass(frozen=True)
class Gate:
    """How the controller's EnvoyGateway configuration switches a feature on."""

    kind: GateKind
    """``switch``: ``path`` is ``true``; ``configured``: ``path`` is set; ``lua``: the ``LuaDisabled`` rule;
    ``listed``: the used group/kind is in the list at ``path`` (of ``extensionManager`` or any of
    ``extensionManagers``); ``ungated``: no switch at the pinned version."""
    path: str = ""


@dataclass(frozen=True)
class Feature:
    name: str
    uses: tuple[Use, ...]
    gate: Gate
    refused: str
    """What the controller does with an object using it while it is off."""
    source: str
    """Where v1.9.0 gates it (files under envoyproxy/gateway at the tag)."""
    envoy_filter: str | None = None
    """The HTTP filter the feature becomes in Envoy (what the local bootstrap renders for it)."""


_ROUTES = ("HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute")
_EXT_SERVICES = ("spec.extAuth.grpc", "spec.extAuth.http")

FEATURES: Final[tuple[Feature, ...]] = (
    Feature(
        name="Lua",
        uses=(Use("EnvoyExtensionPolicy", "spec.lua", group=ENVOY_GATEWAY_GROUP),),
        gate=Gate("lua", "extensionApis.enableLua"),
        refused="every route the EnvoyExtensionPolicy targets answers HTTP 500 (a direct response)",
        source="internal/gatewayapi/envoyextensionpolicy.go buildLuas; api/v1alpha1/envoygateway_helpers.go "
        "LuaDisabled",
        envoy_filter="envoy.filters.http.lua",
    ),
    Feature(
        name="Backend",
        uses=(
            Use("Backend", "metadata.name", group=ENVOY_GATEWAY_GROUP),
            *(Use(kind, "spec.rules[].backendRefs[].kind", equals="Backend") for kind in _ROUTES),
            Use("EnvoyExtensionPolicy", "spec.extProc[].backendRefs[].kind", equals="Backend"),
            Use("EnvoyExtensionPolicy", "spec.extProc[].backendRef.kind", equals="Backend"),
            *(Use("SecurityPolicy", f"{s}.backendRefs[].kind", equals="Backend") for s in _EXT_SERVICES),
            *(Use("SecurityPolicy", f"{s}.backendRef.kind", equals="Backend") for s in _EXT_SERVICES),
        ),
        gate=Gate("switch", "extensionApis.enableBackend"),
        refused="the Backend is not accepted and whatever names it (route, ext_proc, ext_auth) is refused",
        source="internal/gatewayapi/backend.go ProcessBackends; validate.go validateBackendRefBackend; ext_service.go",
    ),
    Feature(
        name="EnvoyPatchPolicy",
        uses=(Use("EnvoyPatchPolicy", "metadata.name", group=ENVOY_GATEWAY_GROUP),),
        gate=Gate("switch", "extensionApis.enableEnvoyPatchPolicy"),
        refused="the patch is not applied (status: disabled in the EnvoyGateway configuration)",
        source="internal/gatewayapi/envoypatchpolicy.go",
    ),
    Feature(
        name="global rate limit",
        uses=(Use("BackendTrafficPolicy", "spec.rateLimit.global", group=ENVOY_GATEWAY_GROUP),),
        gate=Gate("configured", "rateLimit"),
        refused="the BackendTrafficPolicy is refused: no per-client limit at all",
        source="internal/gatewayapi/backendtrafficpolicy.go buildGlobalRateLimit; runner.go GlobalRateLimitEnabled",
        envoy_filter="envoy.filters.http.ratelimit",
    ),
    Feature(
        name="SDS Secret reference",
        uses=(Use("Secret", "type", equals=SDS_SECRET_TYPE),),
        gate=Gate("switch", "extensionApis.enableSDSSecretRef"),
        refused="the listener or BackendTLSPolicy naming the Secret is refused",
        source="internal/gatewayapi/validate.go; backendtlspolicy.go (SDSSecretRefEnabled)",
    ),
    Feature(
        name="custom backend resource",
        uses=tuple(Use(kind, "spec.rules[].backendRefs[]") for kind in _ROUTES),
        gate=Gate("listed", "backendResources"),
        refused="the route's backend is not resolved (the kind is not an extension server's backend resource)",
        source="internal/gatewayapi/runner/runner.go ExtensionGroupKinds; route.go isCustomBackendResource",
    ),
    Feature(
        name="ext_proc",
        uses=(Use("EnvoyExtensionPolicy", "spec.extProc", group=ENVOY_GATEWAY_GROUP),),
        gate=Gate("ungated"),
        refused="(no switch: only its backendRefs are resolved; a Backend among them needs enableBackend)",
        source="internal/gatewayapi/envoyextensionpolicy.go buildExtProc",
        envoy_filter="envoy.filters.http.ext_proc",
    ),
    Feature(
        name="Wasm",
        uses=(Use("EnvoyExtensionPolicy", "spec.wasm", group=ENVOY_GATEWAY_GROUP),),
        gate=Gate("ungated"),
        refused="(no switch: the Wasm cache starts with the translator runner)",
        source="internal/gatewayapi/runner/runner.go startWasmCache; envoyextensionpolicy.go buildWasms",
        envoy_filter="envoy.filters.http.wasm",
    ),
)

EXTENSION_POLICY_FIELDS: Final = frozenset(
    {"targetRef", "targetRefs", "targetSelectors", "mergeType", "lua", "extProc", "wasm", "dynamicModule"}
)
"""``EnvoyExtensionPolicySpec``'s fields at v1.9.0 (``api/v1alpha1/envoyextensionypolicy_types.go``, the file's
own spelling): the inline ``PolicyTargetReferences``, ``mergeType`` and the four extension kinds."""
UNMODELLED_EXTENSIONS: Final = frozenset({"dynamicModule"})
"""Extension kinds no row of ``FEATURES`` gates (dynamic modules: the EnvoyProxy's allow-list gates them)."""
_CORE_BACKEND_GROUPS = frozenset({"", "core"})
_BUILT_IN_BACKENDS = frozenset({("", "Service"), ("core", "Service"), (ENVOY_GATEWAY_GROUP, "Backend")})
_SERVICE_IMPORT = ("multicluster.x-k8s.io", "ServiceImport")


@dataclass(frozen=True)
class Found:
    """One use of a feature by one object."""

    feature: Feature
    kind: str
    name: str
    value: Any


def _walk(node: Any, parts: list[str]) -> Iterator[Any]:
    if not parts:
        yield node
        return
    head, rest = parts[0], parts[1:]
    many = head.endswith("[]")
    key = head.removesuffix("[]")
    if not isinstance(node, Mapping) or node.get(key) is None:
        return
    child = node[key]
    if many:
        if isinstance(child, (list, tuple)):
            for item in child:
                yield from _walk(item, rest)
        return
    yield from _walk(child, rest)


def _group(manifest: Mapping[str, Any]) -> str:
    api_version = str(manifest.get("apiVersion") or "")
    return api_version.split("/")[0] if "/" in api_version else ""


def _custom_backend(ref: Any) -> bool:
    """A backendRef that is neither a Service, a ServiceImport nor an Envoy Gateway Backend."""
    if not isinstance(ref, Mapping):
        return False
    group, kind = str(ref.get("group") or ""), str(ref.get("kind") or "Service")
    return (group, kind) not in _BUILT_IN_BACKENDS and (group, kind) != _SERVICE_IMPORT


def uses(objects: Iterable[Mapping[str, Any]]) -> list[Found]:
    """Every use of a modelled feature by ``objects`` (manifests: apiVersion, kind, metadata, spec)."""
    found = []
    for manifest in objects:
        kind = str(manifest.get("kind") or "")
        name = str((manifest.get("metadata") or {}).get("name") or "?")
        for feature in FEATURES:
            for use in feature.uses:
                if use.kind != kind or (use.group is not None and _group(manifest) != use.group):
                    continue
                for value in _walk(manifest, use.path.split(".")):
                    if feature.gate.kind == "listed":
                        if _custom_backend(value):
                            found.append(Found(feature, kind, name, value))
                    elif use.equals is not None:
                        if value == use.equals:
                            found.append(Found(feature, kind, name, value))
                    elif value not in (None, "", [], {}):
                        found.append(Found(feature, kind, name, value))
    return found


def unmodelled(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """Uses the table cannot judge: an EnvoyExtensionPolicy field outside v1.9.0's spec, or an extension kind
    no row gates. Each is a problem until a row (read at the tag) says how the controller gates it."""
    out = []
    for manifest in objects:
        if manifest.get("kind") != "EnvoyExtensionPolicy" or _group(manifest) != ENVOY_GATEWAY_GROUP:
            continue
        name = str((manifest.get("metadata") or {}).get("name") or "?")
        spec = manifest.get("spec") or {}
        for key in sorted(spec):
            if spec[key] in (None, [], {}):
                continue
            if key not in EXTENSION_POLICY_FIELDS:
                out.append(f"EnvoyExtensionPolicy {name}: spec.{key} is not a field of Envoy Gateway {PINNED_VERSION}")
            elif key in UNMODELLED_EXTENSIONS:
                out.append(
                    f"EnvoyExtensionPolicy {name}: spec.{key} is an extension no gate row models "
                    "(catalog/envoy_gateway_gates.py): add its row, read at the pinned tag, before using it"
                )
    return out


def _get(config: Mapping[str, Any], path: str) -> Any:
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def merged_config(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """The EnvoyGateway configuration the chart renders from a release's ``config.envoyGateway`` values (Helm's
    ``merge`` over the chart's defaults: the release's keys win, maps merge)."""
    return _merge(dict(CHART_DEFAULT_CONFIG), dict(values or {}))


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def _lua_disabled(config: Mapping[str, Any]) -> bool:
    """``ExtensionAPISettings.LuaDisabled`` at v1.9.0: enableLua wins, else the deprecated disableLua, else off."""
    apis = config.get("extensionApis")
    if not isinstance(apis, Mapping):
        return True
    if apis.get("enableLua") is True:
        return False
    if apis.get("disableLua") is not None:
        return bool(apis.get("disableLua"))
    return True


def _listed(config: Mapping[str, Any], path: str, ref: Mapping[str, Any]) -> bool:
    managers = [config.get("extensionManager"), *(config.get("extensionManagers") or [])]
    wanted = (str(ref.get("group") or ""), str(ref.get("kind") or ""))
    for manager in managers:
        listed = manager.get(path) if isinstance(manager, Mapping) else None
        for gvk in listed or []:
            if isinstance(gvk, Mapping) and (str(gvk.get("group") or ""), str(gvk.get("kind") or "")) == wanted:
                return True
    return False


def enabled(feature: Feature, config: Mapping[str, Any], value: Any = None) -> bool:
    """Whether the controller running ``config`` (a merged EnvoyGateway configuration) builds ``feature``."""
    gate = feature.gate
    if gate.kind == "ungated":
        return True
    if gate.kind == "lua":
        return not _lua_disabled(config)
    if gate.kind == "switch":
        return _get(config, gate.path) is True
    if gate.kind == "configured":
        return _get(config, gate.path) is not None
    return isinstance(value, Mapping) and _listed(config, gate.path, value)


def how_to_enable(feature: Feature, value: Any = None) -> str:
    gate = feature.gate
    if gate.kind in ("lua", "switch"):
        return f"set config.envoyGateway.{gate.path}: true"
    if gate.kind == "configured":
        return f"configure config.envoyGateway.{gate.path}"
    if gate.kind == "listed":
        ref = value if isinstance(value, Mapping) else {}
        return (
            f"list {{group: {ref.get('group') or ''}, kind: {ref.get('kind') or ''}}} in "
            f"config.envoyGateway.extensionManager.{gate.path} (an extension server that handles it)"
        )
    return "nothing"


def config_problems(config: Mapping[str, Any]) -> list[str]:
    """What stops the controller from starting at all (``envoygateway_validate.go`` at v1.9.0)."""
    apis = config.get("extensionApis")
    if (
        isinstance(apis, Mapping)
        and apis.get("disableLua") is not None
        and bool(apis["disableLua"]) == bool(apis.get("enableLua", False))
    ):
        return [
            "extensionApis.disableLua and enableLua hold the same value, which Envoy Gateway "
            f"{PINNED_VERSION} refuses at start ('disableLua and enableLua must not have the same value'): "
            "drop the deprecated disableLua and set enableLua"
        ]
    return []


def gate_problems(objects: Iterable[Mapping[str, Any]], config: Mapping[str, Any]) -> list[str]:
    """One line per configuration problem the controller refuses outright, per use of a feature ``config``
    leaves off, and per unmodelled use."""
    return config_problems(config) + use_problems(objects, config)


def use_problems(objects: Iterable[Mapping[str, Any]], config: Mapping[str, Any]) -> list[str]:
    """One line per use of a feature ``config`` leaves off, and per unmodelled use."""
    objects = list(objects)
    out = []
    for found in uses(objects):
        if not enabled(found.feature, config, found.value):
            out.append(
                f"{found.kind} {found.name} uses {found.feature.name}, which Envoy Gateway {PINNED_VERSION} leaves "
                f"off in this configuration: {found.feature.refused}; {how_to_enable(found.feature, found.value)} "
                f"({found.feature.source})"
            )
    return out + unmodelled(objects)


def features_used(objects: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The names of the features ``objects`` use."""
    return frozenset(found.feature.name for found in uses(objects))


def enabling_values(features: Iterable[str]) -> dict[str, Any]:
    """The ``config.envoyGateway`` values that switch on each named feature with a boolean switch (Lua,
    Backend, EnvoyPatchPolicy, SDS Secret references). The others need more than a flag (the rate-limit
    backend, an extension server) and are configured where that is built."""
    out: dict[str, Any] = {}
    by_name = {f.name: f for f in FEATURES}
    for name in sorted(set(features)):
        gate = by_name[name].gate
        if gate.kind in ("lua", "switch"):
            section, key = gate.path.split(".")
            out.setdefault(section, {})[key] = True
    return out


def filter_features(filter_names: Iterable[str]) -> frozenset[str]:
    """The features whose Envoy filter is among ``filter_names`` (a bootstrap's HTTP filters)."""
    names = set(filter_names)
    # Envoy Gateway names one filter per policy entry "<type>/<name>" (internal/xds/translator/lua.go luaFilterName).
    return frozenset(
        f.name
        for f in FEATURES
        if f.envoy_filter is not None and any(n == f.envoy_filter or n.startswith(f.envoy_filter + "/") for n in names)
    )


def feature(name: str) -> Feature:
    (found,) = [f for f in FEATURES if f.name == name]
    return found
