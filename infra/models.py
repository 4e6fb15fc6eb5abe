"""The stack's other models and its canary (``inference-platform:models``): one more rollout each, beside the
stack's own, and the routing the edge renders for them (components/edge/model_routing.py).

Each is the stack's inference rollout built from its resolved sections (settings/models.py ``resolve``): its own
Deployment, Service, PodDisruptionBudget, NetworkPolicy and ServiceMonitor on its own node pool, from the same
image repository. Resource names are ``inference-<key>`` and Kubernetes names ``triton-<key>`` (``<key>`` the
model's slug, ``-<version>`` for a canary); the stack's own model keeps ``inference``/``triton``, so a stack
without the section plans exactly what it did.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pulumi

from inference_platform.catalog.serving_contract import OPENAI_PORT
from inference_platform.components.edge.model_routing import ModelBackend, ModelRoute, ModelRouting
from inference_platform.components.serving.inference_service import InferenceService
from inference_platform.infra.cluster import Compute
from inference_platform.infra.foundation import Foundation
from inference_platform.infra.inference import Inference, _autoscaled_max, _image, _service
from inference_platform.infra.storage import Storage
from inference_platform.settings import Settings
from inference_platform.settings.models import ModelRollout, resolve


@dataclass(frozen=True)
class Models:
    services: dict[str, InferenceService]
    """Rollout key -> its rollout (the stack's own model is ``Inference.service``)."""
    routing: ModelRouting | None
    """What the edge routes by model; None when the stack serves its one model the old way."""
    scaled: dict[str, tuple[InferenceService, Settings]] = dataclasses.field(default_factory=dict)
    """Rollout key -> an autoscaled current version and the settings it was built from (its ScaledObject: infra/
    observability.py). The canary is not here: it keeps its replicas while the gate compares it."""


def build_models(
    settings: Settings, foundation: Foundation, compute: Compute, storage: Storage, inference: Inference
) -> Models:
    if not settings.models.configured or inference.service is None:
        return Models({}, None)
    rollouts = resolve(settings.serving, settings.inference, settings.models)
    services: dict[str, InferenceService] = {}
    scaled: dict[str, tuple[InferenceService, Settings]] = {}
    for rollout in rollouts[1:]:
        pool = compute.pools.get(rollout.serving.node_pool)
        if pool is None or not rollout.inference.has_image:
            reason = "no image" if pool is not None else f"no node pool {rollout.serving.node_pool!r}"
            pulumi.log.info(f"models: no rollout of {rollout.key} ({reason})")
            continue
        scoped = dataclasses.replace(settings, serving=rollout.serving, inference=rollout.inference)
        services[rollout.key] = _service(
            scoped,
            foundation,
            compute,
            storage,
            pool,
            _image(scoped, inference.repository),
            inference.controllers,
            name=f"inference-{rollout.key}",
            app_name=rollout.service_name,
            autoscaled=rollout.role == "current",
        )
        if rollout.role == "current" and _autoscaled_max(scoped) is not None:
            scaled[rollout.key] = (services[rollout.key], scoped)
    routing = _routing(settings, rollouts, inference.service, services, storage.inference.namespace)
    canary = settings.models.canary
    canary_rollout = next((r for r in rollouts if r.role == "canary" and r.key in services), None)
    pulumi.export(
        "models",
        {
            "served": list(routing.public_ids),
            "rollouts": {key: s.service_name for key, s in services.items()},
            "canary": None
            if canary is None
            else {
                "model": canary.model or settings.serving.model,
                "version": canary.version,
                "service": None if canary_rollout is None else services[canary_rollout.key].service_name,
                "weight": canary.weight,
                "steps": list(canary.steps),
                "state": canary.state,
                "nextStep": next((s for s in canary.steps if s > canary.weight), None),
                "rollbackTo": 0,
                "gated": canary.gate.enabled and settings.verification.enabled,
                "lastDecision": None
                if canary.last_decision is None
                else {"action": canary.last_decision.action, "reason": canary.last_decision.reason},
                "decisions": f"kubectl get events -n {storage.inference.namespace} --field-selector "
                "reason=CanaryPromoted (CanaryHeld, CanaryRolledBack, CanaryCompleted); the verification "
                "Job's verify.json 'canary'",
            },
        },
    )
    return Models(services, routing, scaled)


def _routing(
    settings: Settings,
    rollouts: list[ModelRollout],
    primary: InferenceService,
    services: dict[str, InferenceService],
    namespace: str,
) -> ModelRouting:
    def backend(service: InferenceService) -> ModelBackend:
        return ModelBackend(service=service.service_name, namespace=namespace, port=OPENAI_PORT)

    models = settings.models
    current = {r.name: (backend(primary) if r.primary else backend(services[r.key])) for r in rollouts
               if r.role == "current" and (r.primary or r.key in services)}  # fmt: skip
    canary = next((r for r in rollouts if r.role == "canary" and r.key in services), None)
    routes = tuple(
        ModelRoute(
            name=name,
            current=b,
            canary=backend(services[canary.key]) if canary is not None and canary.name == name else None,
            canary_weight=models.canary.weight if canary is not None and canary.name == name and models.canary else 0,
            # Another model answers for this one before the first byte only where models.fallbacks says so.
            fallback=models.fallbacks.get(name) if models.fallbacks.get(name) in current else None,
        )
        for name, b in current.items()
    )
    aliases = {a: t for a, t in models.aliases.items() if t in current}
    tester = models.canary.tester_header if models.canary else "x-canary"
    return ModelRouting(models=routes, aliases=aliases, tester_header=tester)
