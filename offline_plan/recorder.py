"""A mock resource monitor that records each registration as the engine would receive it.

The SDK's ``MockMonitor`` hands mocks only the inputs; the raw ``RegisterResource`` request also
carries the parent, dependencies, property dependencies, provider, protect, retainOnDelete and
deleteBeforeReplace, which the plan and the stack policies need. Two engine behaviours the stock mock
skips are done here: registered transforms are applied (the engine runs them before the provider sees
the inputs), and URNs take the engine's form (no ``pulumi:pulumi:Stack$`` prefix on top-level types).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor, MockResourceArgs, _resolve_callbacks
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

STACK_TYPE = "pulumi:pulumi:Stack"


@dataclass
class RecordedResource:
    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    """Engine wire form: camelCase keys, secrets as signature-wrapped objects."""
    dependencies: list[str] = field(default_factory=list)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    protect: bool = False
    retain_on_delete: bool = False
    provider: str | None = None
    ignore_changes: list[str] = field(default_factory=list)
    delete_before_replace: bool = False
    """``deleteBeforeReplace``: on replacement the engine deletes the old resource before creating the new."""
    replace_on_changes: list[str] = field(default_factory=list)
    deleted_with: str | None = None
    additional_secret_outputs: list[str] = field(default_factory=list)
    id: str | None = None
    read: bool = False
    outputs: dict[str, Any] = field(default_factory=dict)
    """Wire form, like inputs: what the mocks computed (ids, ARNs) on top of the inputs."""


class RecordingMonitor(MockMonitor):
    def __init__(self, mocks: pulumi.runtime.Mocks, project: str, stack: str) -> None:
        super().__init__(mocks)
        self.project = project
        self.stack = stack
        self.stack_urn = f"urn:pulumi:{stack}::{project}::{STACK_TYPE}::{project}-{stack}"
        self.recorded: dict[str, RecordedResource] = {}
        self.stack_outputs: dict[str, Any] = {}
        self._lock = threading.Lock()

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        if parent and parent.split("::")[2] != STACK_TYPE:
            type_ = f"{parent.split('::')[2]}${type_}"
        return f"urn:pulumi:{self.stack}::{self.project}::{type_}::{name}"

    def RegisterResource(self, request):
        if request.type == STACK_TYPE:
            return resource_pb2.RegisterResourceResponse(urn=self.stack_urn)
        _ensure_event_loop()
        urn = self.make_urn(request.parent, request.type, request.name)
        struct = self._transformed(request)
        inputs = rpc.deserialize_properties(struct)
        resource_id, state = self.mocks.new_resource(
            MockResourceArgs(
                typ=request.type,
                name=request.name,
                inputs=inputs,
                provider=request.provider,
                resource_id=request.importId,
                custom=request.custom or False,
            )
        )
        record = RecordedResource(
            urn=urn,
            type=request.type,
            name=request.name,
            parent=request.parent if request.parent and request.parent != self.stack_urn else None,
            custom=bool(request.custom),
            inputs=json_format.MessageToDict(struct),
            dependencies=sorted(set(request.dependencies)),
            property_dependencies={k: sorted(set(v.urns)) for k, v in request.propertyDependencies.items()},
            protect=bool(request.protect),
            retain_on_delete=bool(request.retainOnDelete),
            provider=request.provider.rsplit("::", 1)[0] if request.provider else None,
            ignore_changes=list(request.ignoreChanges),
            delete_before_replace=bool(request.deleteBeforeReplace),
            replace_on_changes=list(request.replaceOnChanges),
            deleted_with=request.deletedWith or None,
            additional_secret_outputs=list(request.additionalSecretOutputs),
            id=resource_id,
        )
        obj = _sync_await(rpc.serialize_properties(state, {}))
        record.outputs = json_format.MessageToDict(obj)
        with self._lock:
            self.recorded[urn] = record
            self.resources[urn] = MockMonitor.ResourceRegistration(urn, resource_id or "", state)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id or "", object=obj)

    def ReadResource(self, request):
        response = super().ReadResource(request)
        urn = self.make_urn(request.parent, request.type, request.name)
        with self._lock:
            self.recorded[urn] = RecordedResource(
                urn=urn,
                type=request.type,
                name=request.name,
                parent=request.parent if request.parent and request.parent != self.stack_urn else None,
                custom=True,
                inputs=json_format.MessageToDict(request.properties),
                id=request.id,
                read=True,
            )
        return resource_pb2.ReadResourceResponse(urn=urn, properties=response.properties)

    def RegisterResourceOutputs(self, request):
        outputs = json_format.MessageToDict(request.outputs)
        with self._lock:
            if request.urn == self.stack_urn:
                self.stack_outputs = outputs
            elif request.urn in self.recorded:
                self.recorded[request.urn].outputs = outputs
        return super().RegisterResourceOutputs(request)

    def _transformed(self, request) -> Any:
        """Resource-level transforms first, then stack transforms, as the engine orders them."""
        struct = request.object
        for transform in [*_resolve_callbacks(request.transforms), *self._stack_transforms]:
            args = pulumi.ResourceTransformArgs(
                custom=bool(request.custom),
                type_=request.type,
                name=request.name,
                props=rpc.deserialize_properties(struct),
                opts=pulumi.ResourceOptions(),
            )
            result = transform(args)
            if hasattr(result, "__await__"):
                result = _sync_await(result)
            if result is not None:
                struct = _sync_await(rpc.serialize_properties(result.props, {}))
        return struct
