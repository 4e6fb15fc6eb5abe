"""Endpoint picker rules (issue 29, ``edge.routing: inference-pool``).

- ``endpoint-picker-pinned``: a Helm release of an llm-d-router chart (``llm-d-router-standalone`` or
  ``-gateway``) names the picker's image tag, never the chart's default ``main`` nor ``latest`` (llm-d-router
  v0.10.0 ``config/charts/routerlib/values.yaml``: ``tag: main``, ``pullPolicy: Always``: every pod start pulls
  whatever ``main`` is that day), pulls it ``IfNotPresent``, reads the TensorRT-LLM metric names
  (``modelServers.type`` other than ``triton``, whose passthrough parser turns prefix scoring off) and, without an
  InferencePool, selects its pods by labels (the chart's own check, made before the release is installed); a release
  that names its own ``router.epp.pluginsConfigFile`` (the Neuron stacks') carries that file in
  ``pluginsCustomConfig``, and its engine type is then the file's, not ``modelServers.type``; that file's profiles
  name only declared plugins, an Alpha plugin (the per-rollout profile handler) comes with
  ``--allow-experimental-plugins``, and the profile handler's default is one of the profiles.
- ``endpoint-picker-fail-open`` (production): every ``extProc`` of an EnvoyExtensionPolicy fails open
  (``failOpen: true``), so a picker that is down or slow never stops requests reaching a replica (the
  BackendTrafficPolicy's least request takes over), and none uses ``FullDuplexStreamed`` (Envoy Gateway v1.9.0
  refuses ``failOpen`` with it, and Envoy answers 500 when the processor is unreachable: see
  ``catalog.endpoint_picker``); and its ``messageTimeout`` is set above Envoy Gateway's 200 ms default.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from pulumi_policy import EnforcementLevel, PolicyConfigSchema
from pulumi_policy.proxy import UnknownValueError

from inference_platform.catalog import endpoint_picker as picker
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import as_document, get
from inference_platform.policies.rules.helm import HELM_INSTALLS

EXTENSION_POLICY = "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyExtensionPolicy"
CHARTS = ("llm-d-router-standalone", "llm-d-router-gateway")
_FLOATING_TAGS = frozenset({"", "main", "latest"})
_DURATION = re.compile(r"^(\d+)(ms|s|m|h)$")
_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
DEFAULT_MESSAGE_TIMEOUT_MS = 200
"""Envoy Gateway v1.9.0 api/v1alpha1/ext_proc_types.go: "Default: 200ms"."""


def release_problems(props: Any) -> list[str]:
    """What is wrong with an llm-d-router release's values (empty for other charts)."""
    chart = str(get(props, "chart") or "")
    if not chart.rstrip("/").endswith(CHARTS):
        return []
    values = get(props, "values") or {}
    image = get(values, "router.epp.image") or {}
    out = []
    tag = str(get(image, "tag") or "")
    if tag in _FLOATING_TAGS:
        out.append(f"router.epp.image.tag {tag or 'unset'!r} floats (the chart's default is main): pin a release tag")
    if get(image, "pullPolicy") in (None, "Always"):
        out.append(
            "router.epp.image.pullPolicy must be IfNotPresent (the chart's default Always re-pulls at every start)"
        )
    config_file = get(values, "router.epp.pluginsConfigFile") or picker.DEFAULT_PLUGINS_FILE
    if config_file != picker.DEFAULT_PLUGINS_FILE:
        # The chart's default-plugins.yaml (and so modelServers.type) is then unused: the named file is the config.
        custom = get(values, "router.epp.pluginsCustomConfig") or {}
        if config_file not in custom:
            out.append(
                f"router.epp.pluginsConfigFile {config_file!r} is not a key of router.epp.pluginsCustomConfig (the "
                "picker would start without its configuration)"
            )
        else:
            out += config_problems(str(custom[config_file]), get(values, "router.epp.flags") or {})
    else:
        kind = get(values, "router.modelServers.type")
        if kind in (None, "triton"):
            out.append(
                f"router.modelServers.type {kind!r}: use triton-tensorrt-llm (the default vllm reads metric names "
                "our servers do not publish; triton turns prefix scoring off)"
            )
    if get(values, "router.inferencePool.create") is False and not get(values, "router.modelServers.matchLabels"):
        out.append("router.modelServers.matchLabels is required without an InferencePool")
    return out


def config_problems(text: str, flags: Any) -> list[str]:
    """What would stop the picker starting, or send requests to no profile, in its own configuration file: a
    profile naming a plugin nobody declared, an Alpha plugin without ``--allow-experimental-plugins`` (v0.10.0
    refuses to start), a ``header-profile-handler`` whose ``defaultProfile`` is no profile (every request without
    the header would get the picker's 429)."""
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        return [f"the picker's configuration is not YAML: {err}"]
    plugins = [p for p in (get(config, "plugins") or []) if isinstance(p, dict)]
    declared = {str(p.get("name") or p.get("type")) for p in plugins}
    profiles = [p for p in (get(config, "schedulingProfiles") or []) if isinstance(p, dict)]
    out = []
    for profile in profiles:
        for ref in profile.get("plugins") or []:
            if str(get(ref, "pluginRef")) not in declared:
                out.append(f"profile {profile.get('name')!r} names plugin {get(ref, 'pluginRef')!r}, never declared")
    alpha = sorted({str(p.get("type")) for p in plugins} & picker.ALPHA_PLUGINS)
    if alpha and get(flags, picker.EXPERIMENTAL_FLAG) is not True:
        out.append(
            f"{', '.join(alpha)} is Alpha in llm-d-router {picker.PINNED_VERSION}: the picker refuses to start without "
            f"router.epp.flags.{picker.EXPERIMENTAL_FLAG}: true"
        )
    names = {str(p.get("name")) for p in profiles}
    for handler in (p for p in plugins if p.get("type") == picker.PROFILE_HANDLER):
        default = str(get(handler, "parameters.defaultProfile") or "decode")
        if len(names) > 1 and default not in names:
            out.append(
                f"{picker.PROFILE_HANDLER} defaultProfile {default!r} is none of the profiles {sorted(names)}: every "
                "request without the profile header would be refused (429)"
            )
    return out


def _pinned(args: Any, report: ReportViolation) -> None:
    if args.resource_type not in HELM_INSTALLS:
        return
    try:
        props = as_document(args.props) or {}
    except UnknownValueError:
        return
    for problem in release_problems(props):
        report(f"{args.name}: {problem}")


def ext_proc_problems(spec: Any) -> list[str]:
    """Why an EnvoyExtensionPolicy's ext_proc calls could stop requests when the processor is down or slow."""
    out = []
    for i, entry in enumerate(get(spec, "extProc") or []):
        if get(entry, "failOpen") is not True:
            out.append(f"extProc[{i}] does not fail open (failOpen: true)")
        modes = [get(entry, f"processingMode.{side}.body") for side in ("request", "response")]
        if "FullDuplexStreamed" in modes:
            out.append(f"extProc[{i}] uses FullDuplexStreamed, which cannot fail open")
        timeout = str(get(entry, "messageTimeout") or "")
        match = _DURATION.match(timeout)
        if match is None or int(match.group(1)) * _MS[match.group(2)] <= DEFAULT_MESSAGE_TIMEOUT_MS:
            out.append(f"extProc[{i}] messageTimeout {timeout or 'unset'!r}: raise it above the 200ms default")
    return out


def _fail_open(args: Any, report: ReportViolation) -> None:
    if args.resource_type != EXTENSION_POLICY or not bool(args.get_config().get("production", False)):
        return
    try:
        document = as_document(args.props) or {}
    except UnknownValueError:
        return
    name = get(document, "metadata.name") or args.name
    for problem in ext_proc_problems(get(document, "spec") or {}):
        report(
            f"EnvoyExtensionPolicy {name} {problem}: in production the endpoint picker must never stand between "
            "a request and a replica (edge.routing inference-pool, docs/edge.md)"
        )


POLICIES = [
    ResourceValidationPolicy(
        name="endpoint-picker-pinned",
        description="An llm-d-router release pins the picker's image tag (never main or latest), pulls it "
        "IfNotPresent, reads TensorRT-LLM's metric names and selects its pods by labels; its own configuration "
        "file names only declared plugins, loads an Alpha plugin only with --allow-experimental-plugins, and its "
        "profile handler's default is one of its profiles.",
        validate=_pinned,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="endpoint-picker-fail-open",
        description="In production every ext_proc of the edge fails open, never full-duplex, with a message "
        "timeout above 200ms: a picker that is down or slow never stops requests reaching a replica.",
        validate=_fail_open,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"production": {"type": "boolean", "default": False}}),
    ),
]
