"""A thin, labelled stand-in for the Pulumi engine's two gRPC services a component provider calls back.

The engine passes a provider the address of its Engine service (logging) on the command line and, in each
ConstructRequest, the address of a ResourceMonitor; the provider's components register their resources
there. Here the ResourceMonitor is the offline plan's recording monitor (inference_platform.offline_plan
.recorder, with its mocks) behind a real gRPC server on 127.0.0.1, so every registration is recorded as the
engine would receive it. Limits: no real deployment engine behind it (no diffs, no state, no provider
plugins), every resource is created by the plan's mocks, and URNs follow the engine's rules as the recorder
implements them.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime.proto import engine_pb2_grpc, resource_pb2, resource_pb2_grpc

from inference_platform.offline_plan.mocks import MockContext, PlanMocks
from inference_platform.offline_plan.recorder import RecordingMonitor

# What a provider's components may ask of the monitor; the recorder answers each as the SDK's mock does.
_FORWARDED = (
    "RegisterResource",
    "RegisterResourceOutputs",
    "ReadResource",
    "Invoke",
    "GetDeploymentInfo",
    "RegisterPackage",
    "RegisterStackTransform",
    "RegisterStackInvokeTransform",
    "RegisterResourceHook",
    "RegisterErrorHook",
    "SignalAndWaitForShutdown",
)


class _Monitor(resource_pb2_grpc.ResourceMonitorServicer):
    def __init__(self, recorder: RecordingMonitor) -> None:
        self.recorder = recorder

    def SupportsFeature(self, request, context):
        # The recorder's mock answers with a plain object; gRPC needs the message.
        return resource_pb2.SupportsFeatureResponse(hasSupport=self.recorder.SupportsFeature(request).hasSupport)


def _forward(method: str):
    def call(self: _Monitor, request, context):
        return getattr(self.recorder, method)(request)

    call.__name__ = method
    return call


for _method in _FORWARDED:
    setattr(_Monitor, _method, _forward(_method))


class _Engine(engine_pb2_grpc.EngineServicer):
    def __init__(self) -> None:
        self.logs: list[str] = []

    def Log(self, request, context):
        self.logs.append(request.message)
        return empty_pb2.Empty()


@dataclass
class EngineStandIn:
    address: str
    """``127.0.0.1:<port>`` of both services (one server), for the provider's argv and ``monitorEndpoint``."""
    recorder: RecordingMonitor
    engine: _Engine

    def register(self, type_: str, name: str, inputs: dict[str, str]) -> tuple[str, str]:
        """Register a resource as the consumer's own program would; returns its URN and id."""
        request = resource_pb2.RegisterResourceRequest(
            type=type_, name=name, custom=True, parent=self.recorder.stack_urn
        )
        request.object.update(inputs)
        response = self.recorder.RegisterResource(request)
        return response.urn, response.id

    def register_provider(self, package: str, name: str, inputs: dict[str, str]) -> str:
        """A provider of the consumer's program (``new k8s.Provider(...)``) as a ConstructRequest's
        ``providers`` carries it: ``<urn>::<id>``."""
        urn, id_ = self.register(f"pulumi:providers:{package}", name, inputs)
        return f"{urn}::{id_}"


@contextmanager
def engine_stand_in(
    project: str = "consumer", stack: str = "dev", region: str = "us-west-2"
) -> Iterator[EngineStandIn]:
    recorder = RecordingMonitor(PlanMocks(MockContext.for_region(region)), project, stack)
    engine = _Engine()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(_Monitor(recorder), server)
    engine_pb2_grpc.add_EngineServicer_to_server(engine, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield EngineStandIn(f"127.0.0.1:{port}", recorder, engine)
    finally:
        server.stop(grace=None)
