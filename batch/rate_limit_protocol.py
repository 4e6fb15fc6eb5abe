"""The rate-limit service's gRPC protocol, ``envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit``, as
message classes built from the field numbers of ``envoy/service/ratelimit/v3/rls.proto`` and
``envoy/extensions/common/ratelimit/v3/ratelimit.proto`` (``envoyproxy/data-plane-api@84e84367``, pinned in
tests/data/envoy_gateway_token_costs.json): only the fields Envoy's rate-limit filter sends and reads. Both the
local stand-in of the service (``inferctl.serving.rate_limit_service``) and the batch lane's budget calls
(``batch.budget``) speak it; needs ``protobuf`` only. It lives with the batch roles because their image holds only
this folder (batch/Dockerfile.dockerignore).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SERVICE = "envoy.service.ratelimit.v3.RateLimitService"
METHOD = "ShouldRateLimit"
# rls.proto RateLimitResponse.RateLimit.Unit (WEEK was added last, as 7).
UNITS = {"SECOND": 1, "MINUTE": 2, "HOUR": 3, "DAY": 4, "MONTH": 5, "YEAR": 6, "WEEK": 7}
OK, OVER_LIMIT = 1, 2


def messages() -> tuple[Any, Any]:
    """The request and response classes, from the field numbers of rls.proto and ratelimit.proto."""
    from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, message_factory, wrappers_pb2

    f = descriptor_pb2.FieldDescriptorProto
    # protobuf types DescriptorPool's methods loosely (untyped calls under --strict): used as Any.
    pool: Any = descriptor_pool.DescriptorPool()
    for module in (duration_pb2, wrappers_pb2):
        pool.Add(descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb))

    def msg(
        name: str, fields: list[tuple[str, int, int, int, str]], nested: Sequence[Any] = (), enums: Sequence[Any] = ()
    ) -> Any:
        m = descriptor_pb2.DescriptorProto(name=name)
        for fname, number, kind, label, type_name in fields:
            added = m.field.add(name=fname, number=number, type=kind, label=label)
            if type_name:
                added.type_name = type_name
        m.nested_type.extend(nested)
        m.enum_type.extend(enums)
        return m

    def enum(name: str, values: Mapping[str, int]) -> Any:
        e = descriptor_pb2.EnumDescriptorProto(name=name)
        for vname, number in values.items():
            e.value.add(name=vname, number=number)
        return e

    one, many = f.LABEL_OPTIONAL, f.LABEL_REPEATED
    s, u32, u64, msg_t, enum_t, bytes_t = (
        f.TYPE_STRING,
        f.TYPE_UINT32,
        f.TYPE_UINT64,
        f.TYPE_MESSAGE,
        f.TYPE_ENUM,
        f.TYPE_BYTES,
    )
    del u64
    base = descriptor_pb2.FileDescriptorProto(
        name="envoy/config/core/v3/base.proto", package="envoy.config.core.v3", syntax="proto3"
    )
    base.message_type.append(
        msg("HeaderValue", [("key", 1, s, one, ""), ("value", 2, s, one, ""), ("raw_value", 3, bytes_t, one, "")])
    )
    common = descriptor_pb2.FileDescriptorProto(
        name="envoy/extensions/common/ratelimit/v3/ratelimit.proto",
        package="envoy.extensions.common.ratelimit.v3",
        syntax="proto3",
        dependency=["google/protobuf/wrappers.proto"],
    )
    entry = msg("Entry", [("key", 1, s, one, ""), ("value", 2, s, one, "")])
    override = msg("RateLimitOverride", [("requests_per_unit", 1, u32, one, ""), ("unit", 2, u32, one, "")])
    common.message_type.append(
        msg(
            "RateLimitDescriptor",
            [
                ("entries", 1, msg_t, many, ".envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry"),
                ("limit", 2, msg_t, one, ".envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.RateLimitOverride"),
                ("hits_addend", 3, msg_t, one, ".google.protobuf.UInt64Value"),
            ],
            nested=[entry, override],
        )
    )
    rls = descriptor_pb2.FileDescriptorProto(
        name="envoy/service/ratelimit/v3/rls.proto",
        package="envoy.service.ratelimit.v3",
        syntax="proto3",
        dependency=[base.name, common.name, "google/protobuf/duration.proto"],
    )
    prefix = ".envoy.service.ratelimit.v3.RateLimitResponse"
    rls.message_type.append(
        msg(
            "RateLimitRequest",
            [
                ("domain", 1, s, one, ""),
                ("descriptors", 2, msg_t, many, ".envoy.extensions.common.ratelimit.v3.RateLimitDescriptor"),
                ("hits_addend", 3, u32, one, ""),
            ],
        )
    )
    limit = msg("RateLimit", [("requests_per_unit", 1, u32, one, ""), ("unit", 2, enum_t, one, f"{prefix}.RateLimit.Unit"),
                              ("name", 3, s, one, "")], enums=[enum("Unit", {"UNKNOWN": 0, **UNITS})])  # fmt: skip
    status = msg(
        "DescriptorStatus",
        [
            ("code", 1, enum_t, one, f"{prefix}.Code"),
            ("current_limit", 2, msg_t, one, f"{prefix}.RateLimit"),
            ("limit_remaining", 3, u32, one, ""),
            ("duration_until_reset", 4, msg_t, one, ".google.protobuf.Duration"),
        ],
    )
    rls.message_type.append(
        msg(
            "RateLimitResponse",
            [
                ("overall_code", 1, enum_t, one, f"{prefix}.Code"),
                ("statuses", 2, msg_t, many, f"{prefix}.DescriptorStatus"),
                ("response_headers_to_add", 3, msg_t, many, ".envoy.config.core.v3.HeaderValue"),
                ("request_headers_to_add", 4, msg_t, many, ".envoy.config.core.v3.HeaderValue"),
            ],
            nested=[limit, status],
            enums=[enum("Code", {"UNKNOWN": 0, "OK": OK, "OVER_LIMIT": OVER_LIMIT})],
        )
    )
    for file in (base, common, rls):
        pool.Add(file)
    request = message_factory.GetMessageClass(pool.FindMessageTypeByName("envoy.service.ratelimit.v3.RateLimitRequest"))
    response = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("envoy.service.ratelimit.v3.RateLimitResponse")
    )
    return request, response
