"""``inference-platform:models``: several models behind one URL, aliases and one weighted canary.

Absent (or ``{}``), the stack serves its one ``serving.model`` exactly as before: nothing here adds a resource,
and no URN changes. Present:

- ``additional``: more models, each by its public name (the OpenAI ``model`` id clients send), each written as
  the ``serving`` and ``inference`` keys that differ from the stack's own sections (its checkpoint, node pool,
  replicas, image, artifacts). Each gets its own rollout, Service and pool placement; the edge routes a request
  to it by the ``model`` in its body (components/edge/model_routing.py).
- ``aliases``: a stable public name mapped to a versioned one (``llama-8b`` -> ``Llama-3.1-8B``).
- A canary falls back to its model's current version before the first byte (the edge retries there).
- ``fallbacks``: a model whose pool cannot answer before the first byte falls back to *another* model, only where
  written here (``Llama-3.1-70B: Llama-3.1-8B``: a smaller model answers rather than none). The edge cannot rewrite
  the body per attempt, so the other model's server also answers the first one's name, as itself: its
  ``serving.fallbackFor`` (set from here) lists the names, and the answer's ``model`` and its
  ``x-inference-served-model`` header say which model answered. One hop: a fallback's own fallback is not followed.
- ``canary``: a new version of one model (its ``serving``/``inference`` differences: checkpoint, image, engine
  settings) rolled out beside the current one. ``weight`` is the canary's share of that model's traffic *now*:
  the state lives here, so ``pulumi up`` stays declarative. Requests with ``testerHeader: always`` go to the
  canary whatever the weight (internal testers). The verification Job gates it (``gate``): it measures the
  canary against the stack's SLOs and error budget and decides promote to the next of ``steps``, hold, or roll
  back to 0 % (inferctl/verify/canary_gate.py); the next ``pulumi up`` writes that weight back here.

Sources for the shape: Envoy AI Gateway v1.1.0's model-name routing (``x-ai-eg-model``, api/v1alpha1/
shared_types.go), Envoy Gateway v1.9.0's fallback ``Backend`` (api/v1alpha1/backend_types.go ``Fallback``), and
why the canary's share is drawn by the edge's routing script rather than carried as Gateway API weighted
``backendRefs`` (Envoy Gateway's consistent hash and endpoint override drop those weights):
tests/data/upstream/model_routing_facts.json pins each.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from inference_platform.settings.base import CheckContext, Problem, Section, describe, validation_problems
from inference_platform.settings.inference import InferenceSettings
from inference_platform.settings.serving import ServingSettings

DEFAULT_STEPS = (5, 25, 50, 100)
DEFAULT_TESTER_HEADER = "x-canary"
TESTER_VALUE = "always"
"""The tester header's value that sends a request to the canary whatever its weight."""
DEFAULT_MAX_TTFT_RATIO = 1.25
DEFAULT_MIN_REQUESTS = 100
DEFAULT_MAX_ITL_RATIO = 1.25
DEFAULT_LIVE_WINDOW_SECONDS = 600
DEFAULT_LIVE_MIN_REQUESTS = 100
MAX_REASON_CHARS = 1000
PRIMARY_SERVICE = "triton"
"""The stack's own model's Service (components/serving/inference_service.py ``DEFAULT_APP_NAME``; a test holds
them equal): its ServiceMonitor labels every series ``job="triton"``."""
MAX_MODELS = 8
"""Models one stack serves (current versions); each is a rollout, a Service and an HTTPRoute rule."""
_PUBLIC_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}(?:/[A-Za-z0-9][A-Za-z0-9._-]{0,62})?$")
_VERSION = re.compile(r"^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$")
_HEADER = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def slug(name: str) -> str:
    """The Kubernetes name part of a public model name: lower case, runs of other characters as one ``-``
    (``Llama-3.1-8B`` -> ``llama-3-1-8b``)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40].rstrip("-")


class AdditionalModel(Section):
    """One more model behind the stack's URL."""

    serving: dict[str, Any] = Field(default_factory=dict)
    """Default ``{}``. ``inference-platform:serving`` keys that differ from the stack's (``model``, ``checkpoint``,
    ``nodePool`` ...): merged over it, then validated as that section (every check of it runs)."""
    inference: dict[str, Any] = Field(default_factory=dict)
    """Default ``{}``. ``inference-platform:inference`` keys that differ (``replicas``, ``image``, ``model.engine``
    ...): merged over the stack's, then validated as that section."""


class CanaryGateSettings(Section):
    """What the verification Job decides within (inferctl/verify/canary_gate.py)."""

    enabled: bool = True
    """Default ``true``. The verification Job measures the canary and decides; production refuses ``false``."""
    rollback: bool = True
    """Default ``true``. A failed canary goes to 0 % by itself (the Job sets the route's weight; the next ``pulumi
    up`` writes weight 0 here). Production refuses ``false``."""
    min_requests: int = Field(default=DEFAULT_MIN_REQUESTS, ge=10, le=100_000)
    """Default 100. Synthetic requests the Job sends to the canary (through the tester header) before it decides;
    fewer answered is a hold, never a promotion."""
    max_ttft_ratio: float = Field(default=DEFAULT_MAX_TTFT_RATIO, ge=1, le=10)
    """Default 1.25. The canary's TTFT p95 may be at most this times the current version's, measured side by side
    (besides meeting serving.slo)."""
    max_error_rate: float | None = Field(default=None, ge=0, le=1)
    """Default: verification.slo.maxErrorRate. The canary's share of failed requests, synthetic and live."""
    max_itl_ratio: float = Field(default=DEFAULT_MAX_ITL_RATIO, ge=1, le=10)
    """Default 1.25. From live traffic: the canary's inter-token latency p95 may be at most this times the
    current version's (besides its median meeting serving.slo.itlP50Ms)."""
    live_window_seconds: int = Field(default=DEFAULT_LIVE_WINDOW_SECONDS, ge=60, le=86_400)
    """Default 600 (60-86400). The window of real traffic the gate reads from Prometheus
    (verification.prometheusUrl): the server's TTFT/ITL histograms and request counters of each version."""
    live_min_requests: int = Field(default=DEFAULT_LIVE_MIN_REQUESTS, ge=10, le=1_000_000)
    """Default 100. Real requests each version must have answered in the window before the live figures are
    judged; a canary already taking traffic (weight above 0) with fewer is held, never promoted."""


class CanaryDecisionSettings(Section):
    """The gate's last decision, written back with the weight (``inferctl verify`` prints both commands)."""

    action: Literal["promote", "hold", "rollback", "complete"]
    """Required. What the gate decided."""
    reason: str = Field(default="", max_length=MAX_REASON_CHARS)
    """Default empty. Why, as the gate said it (at most 1000 characters)."""


class CanarySettings(Section):
    model: str | None = None
    """Default: the stack's model (serving.model). The public name of the model the canary is a new version of."""
    version: str
    """Required. A short name of the new version (lower-case letters, digits, ``-``; at most 20): names its
    rollout (``triton-<model>-<version>``) and shows in the ``x-inference-version`` response header."""
    weight: int = Field(default=0, ge=0, le=100)
    """Default 0. The canary's share of the model's traffic in percent (0-100), now; the current version takes
    the rest. The Job changes it only within ``steps`` and back to 0."""
    steps: list[int] = Field(default_factory=lambda: list(DEFAULT_STEPS))
    """Default ``[5, 25, 50, 100]``. The weights a healthy canary is promoted through, rising, each 1-100."""
    tester_header: str = DEFAULT_TESTER_HEADER
    """Default ``x-canary``. ``<header>: always`` sends a request to the canary whatever the weight (testers and
    the Job's synthetic load); the edge strips it from every other request."""
    serving: dict[str, Any] = Field(default_factory=dict)
    """Default ``{}``. ``serving`` keys of the new version that differ from the current one."""
    inference: dict[str, Any] = Field(default_factory=dict)
    """Default ``{}``. ``inference`` keys of the new version that differ (``image.tag``, ``model.engine`` ...)."""
    gate: CanaryGateSettings = Field(default_factory=CanaryGateSettings)
    """Default: gated, with automatic rollback."""
    last_decision: CanaryDecisionSettings | None = None
    """Default none. The gate's last decision and why (``action``, ``reason``), written back beside ``weight``
    (``inferctl verify`` prints the commands): the ``models`` stack output shows it. A ``rollback`` needs weight 0."""

    @property
    def state(self) -> str:
        """One line: where the canary stands (the ``models`` stack output)."""
        last = self.last_decision
        if self.weight == 0:
            if last is not None and last.action == "rollback":
                return "rolled back: 0 %, the current version serves everything; remove models.canary"
            return f"deployed at 0 %: testers only ({self.tester_header}: {TESTER_VALUE}); first step {self.steps[0]} %"
        if self.weight == self.steps[-1]:
            return f"at the last step ({self.weight} %): make it the current version"
        return f"at {self.weight} %, step {self.steps.index(self.weight) + 1} of {len(self.steps)}"

    @field_validator("version")
    @classmethod
    def _version(cls, version: str) -> str:
        if not _VERSION.match(version):
            raise ValueError("expected 1-20 lower-case letters, digits and '-' (it names Kubernetes objects)")
        return version

    @field_validator("steps")
    @classmethod
    def _steps(cls, steps: list[int]) -> list[int]:
        if not steps or any(not 1 <= s <= 100 for s in steps) or steps != sorted(set(steps)):
            raise ValueError("expected rising weights, each 1-100, without repeats")
        return steps

    @field_validator("tester_header")
    @classmethod
    def _header(cls, header: str) -> str:
        if not _HEADER.match(header):
            raise ValueError("expected a lower-case header name of letters, digits and '-'")
        return header


class ModelsSettings(Section):
    key: ClassVar[str] = "models"

    additional: dict[str, AdditionalModel] = Field(default_factory=dict)
    """Default none. More models by public name, each the serving/inference keys that differ from the stack's."""
    aliases: dict[str, str] = Field(default_factory=dict)
    """Default none. Public alias -> public model name (the stack's serving.model or an ``additional`` one)."""
    canary: CanarySettings | None = None
    """Default none. One canary at a time."""
    fallbacks: dict[str, str] = Field(default_factory=dict)
    """Default none. Public model name -> the other model that answers for it when its pool cannot, before the
    first byte (both models of this stack, never an alias; one hop)."""

    @property
    def configured(self) -> bool:
        """Whether the stack serves more than its one model the old way (routing by model, a canary)."""
        return bool(self.additional or self.aliases or self.canary or self.fallbacks)

    def fallback_for(self, name: str) -> list[str] | None:
        """The models ``name``'s server answers for (``serving.fallbackFor``), None when none."""
        names = sorted(model for model, fallback in self.fallbacks.items() if fallback == name)
        return names or None

    def problems(self, ctx: CheckContext) -> list[Problem]:
        return models_problems(self, ctx)


def public_names(primary: str, models: ModelsSettings) -> list[str]:
    """Every model's public name, the stack's own first."""
    return [primary, *models.additional]


def name_problem(path: str, name: str) -> Problem | None:
    if not _PUBLIC_NAME.match(name) or not all(seg not in (".", "..") for seg in name.split("/")):
        return Problem(
            path,
            f"got {describe(name)}; expected a model id of letters, digits, '.', '_', '-' (at most one '/', as in "
            "owner/name), starting with a letter or digit",
        )
    return None


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` deep-merged onto ``base`` (mappings merge key by key; anything else replaces)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merged(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


# The per-model sections the section resolves to, and its checks.

Role = Literal["current", "canary"]


@dataclass(frozen=True)
class ModelRollout:
    """One rollout the stack runs: a model's current version, or the canary beside it."""

    name: str
    """The public model name (what clients send; the canary shares its model's)."""
    role: Role
    serving: ServingSettings
    inference: InferenceSettings
    version: str | None = None
    """The canary's version name; None for a current version."""
    primary: bool = False
    """The stack's own model: its resources keep their names (and URNs)."""

    @property
    def key(self) -> str:
        """Stable key of the rollout's resources: ``<slug>`` or ``<slug>-<version>``."""
        return f"{slug(self.name)}-{self.version}" if self.version else slug(self.name)

    @property
    def service_name(self) -> str:
        """Its Kubernetes Service (and so the ``job`` label its ServiceMonitor gives every series):
        ``triton`` for the stack's own model, ``triton-<key>`` for the others and the canary."""
        return PRIMARY_SERVICE if self.primary else f"{PRIMARY_SERVICE}-{self.key}"


def resolve(serving: ServingSettings, inference: InferenceSettings, models: ModelsSettings) -> list[ModelRollout]:
    """Every rollout, the stack's own model first, then the additional ones, then the canary. Assumes a valid
    ``models`` section (load_settings checks it first)."""
    out = [ModelRollout(serving.model, "current", serving, inference, primary=True)]
    bases = {serving.model: (serving, inference)}
    for name, extra in models.additional.items():
        answers = {"fallbackFor": models.fallback_for(name)}
        s, i = _resolved(serving, inference, {**extra.serving, "model": name, **answers}, extra.inference)
        bases[name] = (s, i)
        out.append(ModelRollout(name, "current", s, i))
    canary = models.canary
    if canary is not None:
        target = canary.model or serving.model
        base_serving, base_inference = bases[target]
        s, i = _resolved(base_serving, base_inference, canary.serving, canary.inference)
        out.append(ModelRollout(target, "canary", s, i, version=canary.version))
    return out


def _written(section: ServingSettings | InferenceSettings) -> dict[str, object]:
    return section.model_dump(by_alias=True, exclude_unset=True)


def _resolved(
    serving: ServingSettings, inference: InferenceSettings, serving_over: dict[str, Any], inference_over: dict[str, Any]
) -> tuple[ServingSettings, InferenceSettings]:
    return (
        ServingSettings.model_validate(merged(_written(serving), serving_over)),
        InferenceSettings.model_validate(merged(_written(inference), inference_over)),
    )


def models_problems(models: ModelsSettings, ctx: CheckContext) -> list[Problem]:
    """Every problem of the section at once, each naming its key (exit 2 from the CLI and ``pulumi up``)."""
    if not models.configured:
        return []
    serving, inference = ctx.sections.get("serving"), ctx.sections.get("inference")
    if not isinstance(serving, ServingSettings) or not isinstance(inference, InferenceSettings):
        return []  # their own problems are reported; what follows from them is not
    out: list[Problem] = []
    names = public_names(serving.model, models)
    if len(names) > MAX_MODELS:
        out.append(Problem("models.additional", f"{len(names)} models; at most {MAX_MODELS} per stack"))
    slugs: dict[str, str] = {slug(serving.model): "serving.model"}
    resolved: dict[str, tuple[ServingSettings, InferenceSettings]] = {serving.model: (serving, inference)}
    for name, extra in models.additional.items():
        path = f"models.additional.{name}"
        bad = name_problem(path, name)
        if bad is not None:
            out.append(bad)
            continue
        if name == serving.model:
            out.append(Problem(path, f"is serving.model: two models with one public name {name!r}"))
            continue
        first = slugs.setdefault(slug(name), path)
        if first != path:
            out.append(Problem(path, f"names the same Kubernetes objects as {first} ({slug(name)!r}); rename one"))
        if "model" in extra.serving and extra.serving["model"] != name:
            out.append(
                Problem(f"{path}.serving.model", f"got {describe(extra.serving['model'])}; the key is the model: "
                        f"leave it out or write {name!r}")
            )  # fmt: skip
            continue
        # Its own fallbackFor, never the stack's model's (a hand-written one is refused below).
        own = {**extra.serving, "model": name, "fallbackFor": models.fallback_for(name)}
        found = _section_problems(serving, inference, own, extra.inference, path, ctx)
        out += found
        if not found:
            s, i = _resolved(serving, inference, own, extra.inference)
            resolved[name] = (s, i)
    for alias, target in models.aliases.items():
        path = f"models.aliases.{alias}"
        bad = name_problem(path, alias)
        if bad is not None:
            out.append(bad)
        elif alias in names:
            out.append(Problem(path, f"is also a model's name: two models with one public name {alias!r}"))
        if target not in names:
            out.append(
                Problem(path, f"points to {describe(target)}, which is no model of this stack; expected one of "
                        f"{', '.join(names)}")
            )  # fmt: skip
    out += _canary_problems(models, ctx, names, resolved)
    out += _fallback_problems(models, names)
    for name, extra in models.additional.items():
        if "fallbackFor" in extra.serving:
            out.append(Problem(f"models.additional.{name}.serving.fallbackFor", "is set from models.fallbacks"))
    return out


def fallback_for_problems(serving: ServingSettings, models: ModelsSettings | None) -> list[Problem]:
    """``serving.fallbackFor`` is derived from ``models.fallbacks``: settings written back with it (the verification
    Job's copy) load, a list written by hand that says otherwise does not (``load_settings`` runs this)."""
    derived = models.fallback_for(serving.model) if models is not None else None
    if serving.fallback_for is None or serving.fallback_for == derived:
        return []
    return [
        Problem(
            "serving.fallbackFor",
            f"got {describe(serving.fallback_for)}; it is set from models.fallbacks "
            f"({describe(derived) if derived else 'none falls back to this model'}): write the fallback there",
        )
    ]


def _fallback_problems(models: ModelsSettings, names: list[str]) -> list[Problem]:
    out = []
    for model, fallback in models.fallbacks.items():
        path = f"models.fallbacks.{model}"
        if model not in names:
            out.append(Problem(path, f"names no model of this stack; expected one of {', '.join(names)}"))
        if fallback not in names or fallback == model:
            out.append(
                Problem(path, f"falls back to {describe(fallback)}; expected another model of this stack: "
                        f"{', '.join(n for n in names if n != model)}")
            )  # fmt: skip
    return out


def _canary_problems(
    models: ModelsSettings,
    ctx: CheckContext,
    names: list[str],
    resolved: dict[str, tuple[ServingSettings, InferenceSettings]],
) -> list[Problem]:
    canary = models.canary
    if canary is None:
        return []
    out: list[Problem] = []
    target = canary.model or names[0]
    if target not in names:
        return [Problem("models.canary.model", f"got {describe(target)}; expected one of {', '.join(names)}")]
    if target not in resolved:
        return []  # the model's own problems are reported
    base_serving, base_inference = resolved[target]
    where = "inference.image" if target == names[0] else f"models.additional.{target}.inference.image"
    if not base_inference.has_image:
        out.append(
            Problem("models.canary", f"a canary of {target!r}, which has no current version ({where} names no "
                    "image): deploy the model first, then its canary")
        )  # fmt: skip
    if "model" in canary.serving and canary.serving["model"] != target:
        out.append(
            Problem("models.canary.serving.model", f"got {describe(canary.serving['model'])}; a canary is a new "
                    f"version of {target!r} (its checkpoint, image or engine settings), not another model")
        )  # fmt: skip
        return out
    if not canary.serving and not canary.inference:
        out.append(
            Problem("models.canary", "sets neither serving nor inference keys: the canary would be the current "
                    "version; write what the new version changes (e.g. inference.image.tag, serving.checkpoint)")
        )  # fmt: skip
    found = _section_problems(base_serving, base_inference, canary.serving, canary.inference, "models.canary", ctx)
    out += found
    if canary.weight not in (0, *canary.steps):
        out.append(
            Problem("models.canary.weight", f"got {canary.weight}; expected 0 or one of models.canary.steps "
                    f"({', '.join(map(str, canary.steps))}): the gate promotes step by step")
        )  # fmt: skip
    last = canary.last_decision
    if last is not None and last.action == "rollback" and canary.weight != 0:
        out.append(
            Problem("models.canary.weight", f"got {canary.weight}; the last decision (models.canary.lastDecision) "
                    "rolled the canary back: write 0")
        )  # fmt: skip
    slugs = {slug(n) for n in names}
    key = f"{slug(target)}-{canary.version}"
    if key in slugs:
        out.append(Problem("models.canary.version", f"names the same Kubernetes objects as the model {key!r}"))
    if ctx.production:
        verification = ctx.sections.get("verification")
        enabled = getattr(verification, "enabled", False)
        if enabled and canary.gate.enabled and getattr(verification, "prometheus_url", None) is None:
            out.append(
                Problem("verification.prometheusUrl", "unset: a production canary is judged on the live metrics "
                        "of real traffic too (models.canary.gate.liveWindowSeconds); give the Prometheus the "
                        "rollouts' ServiceMonitors feed, e.g. http://<prometheus>.<namespace>.svc:9090")
            )  # fmt: skip
        if not canary.gate.enabled or not canary.gate.rollback or not enabled:
            out.append(
                Problem("models.canary.gate", "production canaries need the verification gate and automatic "
                        "rollback: models.canary.gate.enabled and .rollback true, and verification.enabled "
                        f"(got gate.enabled {canary.gate.enabled}, gate.rollback {canary.gate.rollback}, "
                        f"verification.enabled {enabled})")
            )  # fmt: skip
    if canary.tester_header in ("x-api-key", "authorization", "x-client-id", "x-inference-model"):
        out.append(
            Problem("models.canary.testerHeader", f"got {canary.tester_header!r}: a header the edge already "
                    f"uses; pick another (default x-canary, value {TESTER_VALUE!r})")
        )  # fmt: skip
    return out


def _section_problems(
    serving: ServingSettings,
    inference: InferenceSettings,
    serving_over: dict[str, Any],
    inference_over: dict[str, Any],
    path: str,
    ctx: CheckContext,
) -> list[Problem]:
    """The merged sections validated as the stack's own, problems named under ``path``."""
    raw_serving, raw_inference = merged(_written(serving), serving_over), merged(_written(inference), inference_over)
    out = validation_problems(ServingSettings, raw_serving, f"{path}.serving")
    out += validation_problems(InferenceSettings, raw_inference, f"{path}.inference")
    if out:
        return out
    s, i = ServingSettings.model_validate(raw_serving), InferenceSettings.model_validate(raw_inference)
    sections = {**ctx.sections, "serving": s, "inference": i}
    view = CheckContext(
        stack=ctx.stack, environment=ctx.environment, region=ctx.region, sections=sections, failed=ctx.failed
    )
    for section, prefix in ((s, "serving"), (i, "inference")):
        for p in section.problems(view):
            if p.path == prefix or p.path.startswith((f"{prefix}.", f"{prefix}[")):
                out.append(Problem(f"{path}.{p.path}", p.message))
    return out
