"""The image's side of the serving contract, re-exported so image code keeps one short import path."""

from inference_platform.catalog.serving_contract import (
    GRPC_PORT,
    GRPC_RESTRICTED_HEADER_PREFIX,
    HTTP_PORT,
    LIVE_PATH,
    LOOPBACK,
    METRICS_PATH,
    METRICS_PORT,
    MODELS_DIR,
    POD_ADDRESS,
    READY_PATH,
    REPOSITORY_DIR,
)

__all__ = [
    "GRPC_PORT",
    "GRPC_RESTRICTED_HEADER_PREFIX",
    "HTTP_PORT",
    "LIVE_PATH",
    "LOOPBACK",
    "METRICS_PATH",
    "METRICS_PORT",
    "MODELS_DIR",
    "POD_ADDRESS",
    "READY_PATH",
    "REPOSITORY_DIR",
]
