"""endpoint-picker-pinned and endpoint-picker-fail-open (issue 29), and the no-wait patch under
envoy-patch-policy-load-bound-only: what the edge renders passes, each way out fails naming it."""

from __future__ import annotations

import copy

import pulumi_kubernetes as k8s
import pytest

from inference_platform.catalog import endpoint_picker as picker

PINNED = "endpoint-picker-pinned"
FAIL_OPEN = "endpoint-picker-fail-open"
PATCH = "envoy-patch-policy-load-bound-only"
VALUES = picker.chart_values(serving_labels={"app": "triton"}, serving_port=9000, system_affinity={}, tolerations=[])
EXT_PROC = picker.ext_proc("inference")
NO_WAIT = picker.no_wait_patch(
    namespace="envoy-gateway-system", gateway="edge", listener="http", policy="edge-credentials"
)


def _release(values, chart=picker.CHART.chart):
    def program():
        k8s.helm.v3.Release("picker", name=picker.RELEASE, chart=chart, version=picker.CHART.version, values=values)

    return program


def _extension(entry):
    def program():
        k8s.apiextensions.CustomResource(
            "credentials",
            api_version="gateway.envoyproxy.io/v1alpha1",
            kind="EnvoyExtensionPolicy",
            metadata={"name": "edge-credentials", "namespace": "envoy-gateway-system"},
            spec={"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "r"}],
                  "extProc": [entry]},
        )  # fmt: skip

    return program


def _patch(spec):
    def program():
        k8s.apiextensions.CustomResource(
            "no-wait",
            api_version="gateway.envoyproxy.io/v1alpha1",
            kind="EnvoyPatchPolicy",
            metadata={"name": "edge-picker-no-wait", "namespace": "envoy-gateway-system"},
            spec=spec,
        )

    return program


def _with(values, path: str, value):
    out = copy.deepcopy(values)
    target = out
    *parents, last = path.split(".")
    for part in parents:
        target = target[part]
    if value is None:
        target.pop(last)
    else:
        target[last] = value
    return out


def test_the_rendered_release_passes(violations):
    assert violations(_release(VALUES), PINNED) == []
    # Another chart's values are not judged.
    assert violations(_release({}, chart="oci://example.com/other"), PINNED) == []


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        ("router.epp.image.tag", "main", "router.epp.image.tag 'main' floats"),
        ("router.epp.image.tag", None, "router.epp.image.tag 'unset' floats"),
        ("router.epp.image.pullPolicy", "Always", "pullPolicy must be IfNotPresent"),
        ("router.modelServers.type", "triton", "router.modelServers.type 'triton'"),
        ("router.modelServers.matchLabels", None, "matchLabels is required"),
    ],
)
def test_a_floating_or_blind_picker_fails(violations, path, value, words):
    (found,) = violations(_release(_with(VALUES, path, value)), PINNED)
    assert found.mandatory and words in found.message, found.message


NEURON_VALUES = picker.chart_values(
    serving_labels={"app": "triton"}, serving_port=9000, system_affinity={}, tolerations=[], neuron=True
)


def test_a_release_with_its_own_configuration_is_judged_by_that_file(violations):
    assert violations(_release(NEURON_VALUES), PINNED) == []
    # Its config file names the engine: modelServers.type is then unused (the chart's default file is not loaded).
    assert violations(_release(_with(NEURON_VALUES, "router.modelServers.type", "triton")), PINNED) == []
    missing = _with(NEURON_VALUES, "router.epp.pluginsCustomConfig", {"other.yaml": "kind: EndpointPickerConfig"})
    (found,) = violations(_release(missing), PINNED)
    assert f"router.epp.pluginsConfigFile {picker.NEURON_PLUGINS_FILE!r} is not a key" in found.message


def test_the_rendered_ext_proc_passes_in_production(violations):
    assert violations(_extension(EXT_PROC), FAIL_OPEN, {"production": True}) == []


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        ("failOpen", False, "does not fail open"),
        ("failOpen", None, "does not fail open"),
        ("processingMode.request.body", "FullDuplexStreamed", "FullDuplexStreamed, which cannot fail open"),
        ("messageTimeout", None, "messageTimeout 'unset'"),
        ("messageTimeout", "200ms", "raise it above the 200ms default"),
    ],
)
def test_a_picker_that_can_stop_requests_fails_in_production_only(violations, path, value, words):
    bad = _extension(_with(EXT_PROC, path, value))
    (found,) = violations(bad, FAIL_OPEN, {"production": True})
    assert found.mandatory and "EnvoyExtensionPolicy edge-credentials" in found.message and words in found.message
    assert violations(bad, FAIL_OPEN) == []  # development may try a fail-closed picker


def test_the_no_wait_patch_passes_and_nothing_beside_it(violations):
    assert violations(_patch(NO_WAIT), PATCH) == []
    for path, value in (
        ("operation.value", False),
        ("operation.path", "/failure_mode_allow"),
        ("operation.jsonPath", "$..http_filters[?(@.name=='envoy.filters.http.lua')].typed_config"),
        ("type", "type.googleapis.com/envoy.config.cluster.v3.Cluster"),
    ):
        spec = copy.deepcopy(NO_WAIT)
        spec["jsonPatches"][0] = _with(spec["jsonPatches"][0], path, value)
        (found,) = violations(_patch(spec), PATCH)
        assert "EnvoyPatchPolicy edge-picker-no-wait" in found.message, (path, found.message)
