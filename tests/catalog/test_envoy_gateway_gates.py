"""The Envoy Gateway feature gates (issue 28 R12), read from envoyproxy/gateway at tag v1.9.0
(``git show v1.9.0:<path>``) and written down here as data, each with its file; the catalog's model of them
(catalog/envoy_gateway_gates.py) is checked against these facts, and the shipped stacks against the model.

- api/v1alpha1/envoygateway_types.go ``ExtensionAPISettings``: ``enableEnvoyPatchPolicy``, ``enableBackend``,
  ``disableLua`` (deprecated, ``*bool``), ``enableLua`` ("By default, Lua policies are disabled"),
  ``enableSDSSecretRef``.
- api/v1alpha1/envoygateway_helpers.go ``LuaDisabled``: nil settings -> disabled; ``EnableLua`` -> enabled;
  ``DisableLua`` set -> its value; else disabled.
- api/v1alpha1/validation/envoygateway_validate.go: "disableLua and enableLua must not have the same value".
- internal/gatewayapi/runner/runner.go: the translator's ``LuaEnvoyExtensionPolicyDisabled``,
  ``EnvoyPatchPolicyEnabled``, ``BackendEnabled``, ``SDSSecretRefEnabled``, ``GlobalRateLimitEnabled``
  (``RateLimit != nil``) and ``ExtensionGroupKinds`` (extension managers' resources and backendResources).
- internal/gatewayapi/envoyextensionpolicy.go ``buildLuas``: "Skipping Lua EnvoyExtensionPolicy as feature is
  disabled in the Gateway"; then "setting 500 direct response in routes due to errors in EnvoyExtensionPolicy".
- charts/gateway-helm/values.tmpl.yaml ``config.envoyGateway`` (gateway, provider, logging, ``extensionApis: {}``)
  and templates/envoy-gateway-config.yaml (``merge $userEnvoyGatewayConfig $baseEnvoyGatewayConfig``).
- api/v1alpha1/envoyextensionypolicy_types.go (sic) ``EnvoyExtensionPolicySpec``: the inline
  PolicyTargetReferences, mergeType, wasm, extProc, lua, dynamicModule.
"""

from __future__ import annotations

import pytest

from inference_platform.catalog import envoy_gateway_gates as gates
from inference_platform.catalog.edge_charts import ENVOY_GATEWAY
from inference_platform.components.edge.controller_config import controller_values
from inference_platform.components.edge.gateway_api import render_gateway_objects
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET

TAG = "v1.9.0"
EXTENSION_API_FIELDS = {"enableEnvoyPatchPolicy", "enableBackend", "disableLua", "enableLua", "enableSDSSecretRef"}
# (extensionApis as configured, LuaDisabled's answer) per api/v1alpha1/envoygateway_helpers.go.
LUA_DISABLED = [
    (None, True),
    ({}, True),
    ({"enableLua": True}, False),
    ({"enableLua": False}, True),
    ({"disableLua": True}, True),
    ({"disableLua": False}, False),
    ({"enableLua": True, "disableLua": True}, False),
]
# What envoygateway_validate.go refuses at start: disableLua set to the value enableLua holds (default false).
REFUSED_AT_START = [{"disableLua": False}, {"disableLua": True, "enableLua": True}]


def lua_policy(name: str = "credentials") -> dict:
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "EnvoyExtensionPolicy",
        "metadata": {"name": name},
        "spec": {"targetRefs": [{"kind": "HTTPRoute", "name": "r"}], "lua": [{"type": "Inline", "inline": "x"}]},
    }


def config(extension_apis: dict | None = None, **more: object) -> dict:
    values = {**({"extensionApis": extension_apis} if extension_apis is not None else {}), **more}
    merged = gates.merged_config(values)
    if extension_apis is None:
        merged.pop("extensionApis")  # the chart's default {} removed: the controller's nil case
    return merged


def test_read_at_the_pinned_chart():
    assert ENVOY_GATEWAY.version == gates.PINNED_VERSION == TAG
    assert gates.CHART_DEFAULT_CONFIG["extensionApis"] == {}
    feature_fields = {f.gate.path.split(".")[1] for f in gates.FEATURES if f.gate.path.startswith("extensionApis.")}
    assert feature_fields <= EXTENSION_API_FIELDS and "disableLua" not in feature_fields


@pytest.mark.parametrize(("apis", "disabled"), LUA_DISABLED)
def test_lua_is_enabled_exactly_as_lua_disabled_says(apis, disabled):
    assert gates.enabled(gates.feature("Lua"), config(apis)) is not disabled


@pytest.mark.parametrize("apis", REFUSED_AT_START)
def test_a_configuration_the_controller_refuses_to_start_with_is_a_problem(apis):
    (problem,) = gates.config_problems(config(apis))
    assert "must not have the same value" in problem


def test_the_chart_default_leaves_lua_off_and_the_lua_policy_gets_a_500():
    problems = gates.gate_problems([lua_policy()], gates.merged_config({}))
    (problem,) = problems
    assert "EnvoyExtensionPolicy credentials uses Lua" in problem
    assert "HTTP 500" in problem and "extensionApis.enableLua: true" in problem


def test_what_the_old_controller_values_installed_fails_and_what_we_install_passes():
    policy = load_settings({"tags": {"owner": "t", "costCenter": "c"}}, project="p", stack="s", region="us-west-2")
    objects = render_gateway_objects(policy.edge.policy(), TARGET)
    assert gates.features_used(objects) == {"Lua", "global rate limit"}
    # Before issue 28: rateLimit only, no extensionApis (the chart's {}).
    old = {"rateLimit": {"backend": {"type": "Redis", "redis": {"url": "r:6379"}}, "failClosed": True}}
    assert [p for p in gates.gate_problems(objects, gates.merged_config(old)) if "uses Lua" in p]
    ours = controller_values("r:6379", features=gates.features_used(objects))["config"]["envoyGateway"]
    assert ours["extensionApis"] == {"enableLua": True}
    assert gates.gate_problems(objects, gates.merged_config(ours)) == []


def test_only_what_is_used_is_switched_on():
    assert controller_values("r:6379")["config"]["envoyGateway"]["extensionApis"] == {}
    assert gates.enabling_values(["Lua", "Backend", "EnvoyPatchPolicy", "ext_proc", "global rate limit"]) == {
        "extensionApis": {"enableLua": True, "enableBackend": True, "enableEnvoyPatchPolicy": True}
    }


def test_a_backend_anywhere_needs_enable_backend():
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "r"},
        "spec": {"rules": [{"backendRefs": [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "b"}]}]},
    }
    ext_proc = {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "EnvoyExtensionPolicy",
        "metadata": {"name": "scheduler"},
        "spec": {"extProc": [{"backendRefs": [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "b"}]}]},
    }
    backend = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "Backend", "metadata": {"name": "b"}}
    off = gates.merged_config({})
    problems = gates.gate_problems([route, ext_proc, backend], off)
    assert len([p for p in problems if "uses Backend" in p]) == 3
    assert all("enableBackend: true" in p for p in problems)
    assert (
        gates.gate_problems([route, ext_proc, backend], gates.merged_config({"extensionApis": {"enableBackend": True}}))
        == []
    )
    # ext_proc itself has no switch at v1.9.0: to a Service it needs nothing.
    ext_proc["spec"]["extProc"][0]["backendRefs"] = [{"name": "epp", "port": 9002}]
    assert gates.features_used([ext_proc]) == {"ext_proc"}
    assert gates.gate_problems([ext_proc], off) == []


def test_patch_policies_global_limits_and_sds_secrets():
    patch = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "EnvoyPatchPolicy", "metadata": {"name": "p"}}
    limits = {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "BackendTrafficPolicy",
        "metadata": {"name": "l"},
        "spec": {"rateLimit": {"type": "Global", "global": {"rules": [{"limit": {"requests": 1, "unit": "Minute"}}]}}},
    }
    sds = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": gates.SDS_SECRET_TYPE}
    problems = gates.gate_problems([patch, limits, sds], gates.merged_config({}))
    assert [p.split(",")[0] for p in problems] == [
        "EnvoyPatchPolicy p uses EnvoyPatchPolicy",
        "BackendTrafficPolicy l uses global rate limit",
        "Secret s uses SDS Secret reference",
    ]
    on = {"extensionApis": {"enableEnvoyPatchPolicy": True, "enableSDSSecretRef": True}, "rateLimit": {}}
    assert gates.gate_problems([patch, limits, sds], gates.merged_config(on)) == []


def test_a_custom_backend_must_be_an_extension_servers_backend_resource():
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "r"},
        "spec": {
            "rules": [{"backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "p"}]}]
        },
    }
    (problem,) = gates.gate_problems([route], gates.merged_config({}))
    assert "custom backend resource" in problem and "InferencePool" in problem
    listed = {
        "extensionManager": {
            "backendResources": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}]
        }
    }
    assert gates.gate_problems([route], gates.merged_config(listed)) == []
    plain = {**route, "spec": {"rules": [{"backendRefs": [{"name": "svc", "port": 80}]}]}}
    assert gates.uses([plain]) == []


def test_an_extension_no_row_models_and_a_field_outside_the_spec_are_problems():
    module = lua_policy()
    module["spec"] = {"targetRefs": [], "dynamicModule": [{"name": "m"}], "luaScript": "x"}
    problems = gates.gate_problems([module], gates.merged_config({"extensionApis": {"enableLua": True}}))
    assert any("spec.dynamicModule is an extension no gate row models" in p for p in problems)
    assert any("spec.luaScript is not a field" in p for p in problems)


def test_every_row_cites_its_source_and_says_what_happens():
    for feature in gates.FEATURES:
        assert feature.source and feature.refused and feature.uses
    assert gates.filter_features(["envoy.filters.http.lua", "envoy.filters.http.router"]) == {"Lua"}
