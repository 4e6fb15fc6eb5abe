"""Composition of one stack: settings -> components -> resources, in dependency order.

Nothing here decides inside ``apply``: every choice is made from the validated settings and from
data-source answers obtained before the first resource is registered, so preview equals update.
Each area builds its components in its own module and hands the next area what it needs.
"""

from __future__ import annotations

import pulumi

from inference_platform.components.common.tagging import default_tags_transform
from inference_platform.infra.batch import batch_routes, build_batch, build_batch_scaling
from inference_platform.infra.cluster import build_cluster
from inference_platform.infra.config_source import read_settings
from inference_platform.infra.edge import build_edge
from inference_platform.infra.foundation import build_foundation
from inference_platform.infra.inference import build_inference
from inference_platform.infra.models import build_models
from inference_platform.infra.observability import build_observability
from inference_platform.infra.storage import build_storage
from inference_platform.infra.verification import build_verification


def main() -> None:
    settings = read_settings()
    pulumi.runtime.register_resource_transform(default_tags_transform(settings.default_tags))
    foundation = build_foundation(settings)
    compute = build_cluster(settings, foundation)
    storage = build_storage(settings, foundation, compute)
    inference = build_inference(settings, foundation, compute, storage)
    models = build_models(settings, foundation, compute, storage, inference)
    batch = build_batch(settings, foundation, compute, storage, inference)
    edge = build_edge(settings, foundation, compute, storage, inference, *batch_routes(batch), models=models)
    observability = build_observability(settings, foundation, compute, storage, inference, edge, batch, models)
    build_batch_scaling(settings, compute, batch, observability.keda, observability.stack)
    build_verification(settings, foundation, compute, storage, inference, edge)
