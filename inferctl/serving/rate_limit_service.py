"""STAND-IN for the rate-limit service Envoy Gateway runs (``envoyproxy/ratelimit``, a Go binary no registry here
carries): its gRPC protocol, thin and faithful, for the local edge's token limits (issue 30).

The protocol is ``envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`` (``envoy/service/ratelimit/v3/
rls.proto`` and ``envoy/extensions/common/ratelimit/v3/ratelimit.proto`` of ``envoyproxy/data-plane-api@84e84367``):
the message types below are built from those files' field numbers, only the fields Envoy's rate-limit filter sends
and reads (a request's ``domain``, ``descriptors`` with their ``entries``, ``limit`` and ``hits_addend``; a
response's ``overall_code``, per-descriptor ``code``, ``current_limit``, ``limit_remaining`` and
``duration_until_reset``). The enum ``RateLimitOverride.unit`` is read as its varint.

What it does, each copied from ``envoyproxy/ratelimit@3fb70258`` (the version Envoy Gateway v1.9.0's go.mod
imports):

- the configuration is the service's own shape (``domain``, nested ``descriptors`` of ``key``/``value`` with
  ``rate_limit {unit, requests_per_unit}`` and ``shadow_mode``); a descriptor matches ``key_value`` first, then the
  bare ``key`` (any value), and a limit counts only at the descriptor's last entry; a request-supplied ``limit``
  wins (``src/config/config_impl.go`` ``GetLimit``);
- hits: the descriptor's own ``hits_addend`` when set, zero included ("check only"), else ``max(1, request's
  hits_addend)`` (``src/utils/utilities.go`` ``GetHitsAddends``);
- fixed windows aligned to the Unix epoch: one counter per ``domain + entries + (now / divider) * divider``, the
  divider SECOND 1 ... MONTH 2,592,000 (30 days), YEAR 31,536,000 (``src/limiter/cache_key.go``,
  ``utilities.go`` ``UnitToDivider``); every hit is added, over the limit or not (``INCRBY``, Redis fixed-window
  cache with ``STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`` off, its default);
- over the limit when the count after the increase is strictly above ``requests_per_unit``; ``limit_remaining`` is
  what is left, ``duration_until_reset`` = ``divider - now % divider`` (``src/limiter/base_limiter.go``
  ``GetResponseDescriptorStatus``, ``utilities.go`` ``CalculateReset``); a shadow-mode limit answers OK;
- the overall code is OVER_LIMIT when any descriptor is (``src/service/ratelimit.go``).

Its limits, also named in the README: counters live in this process's memory (one service, no Redis, gone when it
stops); no near-limit statistics, no local over-limit cache, no ``unlimited``/``replaces``/wildcard/``quota_mode``
options, no response headers of its own (Envoy's filter writes the draft-03 ``x-ratelimit-*`` headers from the
statuses). Every call is appended to a ledger (JSON lines: domain, descriptors with their entries and hits, the
overall code): what the conformance test reads as the edge's debits.

Run: ``python -m inference_platform.inferctl.serving.rate_limit_service --config <json> --ledger <jsonl> --port N``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inference_platform.errors import CommandError
from inference_platform.processes import LOOPBACK, stop_group, with_parent_death

MODULE = "inference_platform.inferctl.serving.rate_limit_service"
SERVICE = "envoy.service.ratelimit.v3.RateLimitService"
METHOD = "ShouldRateLimit"
# rls.proto RateLimitResponse.RateLimit.Unit (WEEK was added last, as 7).
UNITS = {"SECOND": 1, "MINUTE": 2, "HOUR": 3, "DAY": 4, "MONTH": 5, "YEAR": 6, "WEEK": 7}
# envoyproxy/ratelimit src/utils/utilities.go UnitToDivider.
DIVIDERS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 604800, "MONTH": 2592000, "YEAR": 31536000}
OK, OVER_LIMIT = 1, 2
READY_TIMEOUT = 20.0
STOP_TIMEOUT = 5.0


@dataclass
class Node:
    """One configured descriptor level: its limit (if any) and the levels under it, by ``key_value`` or ``key``."""

    limit: tuple[int, str] | None = None
    shadow_mode: bool = False
    children: dict[str, Node] = field(default_factory=dict)


def parse_config(config: Mapping[str, Any]) -> dict[str, Node]:
    """``{"domains": [<the service's YAML config, one per domain>]}`` as one tree per domain."""

    def level(descriptors: Sequence[Mapping[str, Any]]) -> dict[str, Node]:
        out: dict[str, Node] = {}
        for d in descriptors:
            key = f"{d['key']}_{d['value']}" if d.get("value") else d["key"]
            limit = d.get("rate_limit")
            out[key] = Node(
                limit=(int(limit["requests_per_unit"]), str(limit["unit"]).upper()) if limit else None,
                shadow_mode=bool(d.get("shadow_mode", False)),
                children=level(d.get("descriptors", [])),
            )
        return out

    return {c["domain"]: Node(children=level(c.get("descriptors", []))) for c in config["domains"]}


class Limiter:
    """The service's decisions over in-memory fixed-window counters."""

    def __init__(self, config: Mapping[str, Any], clock: Callable[[], float] = time.time) -> None:
        self.domains = parse_config(config)
        self.clock = clock
        self.counters: dict[str, int] = {}
        self.lock = threading.Lock()

    def find(self, domain: str, entries: Sequence[tuple[str, str]]) -> tuple[tuple[int, str], bool] | None:
        node = self.domains.get(domain)
        if node is None:
            return None
        for i, (key, value) in enumerate(entries):
            nxt = node.children.get(f"{key}_{value}") or node.children.get(key)
            if nxt is None:
                return None
            if i == len(entries) - 1:
                return (nxt.limit, nxt.shadow_mode) if nxt.limit is not None else None
            node = nxt
        return None

    def decide(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request``: ``{"domain", "hits_addend", "descriptors": [{"entries", "hits_addend" (or None), "limit"
        (or None)}]}``; the response as plain data."""
        now = int(self.clock())
        statuses: list[dict[str, Any]] = []
        overall = OK
        with self.lock:
            for d in request["descriptors"]:
                hits = d["hits_addend"] if d["hits_addend"] is not None else max(1, request["hits_addend"])
                entries = [tuple(e) for e in d["entries"]]
                found = (d["limit"], False) if d["limit"] is not None else self.find(request["domain"], entries)
                d["hits"] = hits
                if found is None:
                    statuses.append({"code": OK})
                    continue
                (per_unit, unit), shadow = found
                divider = DIVIDERS[unit]
                key = "_".join([request["domain"], *(f"{k}_{v}" for k, v in entries), str(now // divider * divider)])
                after = self.counters.get(key, 0) + hits
                self.counters[key] = after
                over = after > per_unit
                code = OVER_LIMIT if over and not shadow else OK
                statuses.append(
                    {
                        "code": code,
                        "limit": (per_unit, unit),
                        "remaining": 0 if over else per_unit - after,
                        "reset": divider - now % divider,
                    }
                )
                if code == OVER_LIMIT:
                    overall = OVER_LIMIT
        return {"overall": overall, "statuses": statuses}


def _messages() -> tuple[Any, Any]:
    """The request and response classes, from the field numbers of rls.proto and ratelimit.proto."""
    from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, message_factory, wrappers_pb2

    f = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()
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


def serve(config: Mapping[str, Any], ledger: Path, port: int, address: str = LOOPBACK) -> Any:
    """The gRPC server, started; every call decided by a :class:`Limiter` and appended to ``ledger``."""
    import grpc  # type: ignore[import-untyped]  # grpcio ships no types; the stub package is not in the locks

    request_type, response_type = _messages()
    limiter = Limiter(config)
    units = {v: k for k, v in UNITS.items()}
    write_lock = threading.Lock()

    def should_rate_limit(message: Any, context: Any) -> Any:
        request = {
            "domain": message.domain,
            "hits_addend": message.hits_addend,
            "descriptors": [
                {
                    "entries": [[e.key, e.value] for e in d.entries],
                    "hits_addend": d.hits_addend.value if d.HasField("hits_addend") else None,
                    "limit": (d.limit.requests_per_unit, units[d.limit.unit]) if d.HasField("limit") else None,
                }
                for d in message.descriptors
            ],
        }
        decided = limiter.decide(request)
        answer = response_type(overall_code=decided["overall"])
        for st in decided["statuses"]:
            out = answer.statuses.add(code=st["code"])
            if "limit" in st:
                out.current_limit.requests_per_unit, unit = st["limit"]
                out.current_limit.unit = UNITS[unit]
                out.limit_remaining = st["remaining"]
                out.duration_until_reset.seconds = st["reset"]
        entry = {
            "domain": request["domain"],
            "descriptors": [{"entries": d["entries"], "hits": d["hits"]} for d in request["descriptors"]],
            "overall": "OVER_LIMIT" if decided["overall"] == OVER_LIMIT else "OK",
            "at": time.time(),
        }
        with write_lock, ledger.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
        return answer

    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            METHOD: grpc.unary_unary_rpc_method_handler(
                should_rate_limit,
                request_deserializer=request_type.FromString,
                response_serializer=response_type.SerializeToString,
            )
        },
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"{address}:{port}")
    server.start()
    return server


def read_ledger(ledger: Path) -> list[dict[str, Any]]:
    """Every call the service answered, in order."""
    if not ledger.exists():
        return []
    return [json.loads(line) for line in ledger.read_text(encoding="utf-8").splitlines() if line.strip()]


@contextlib.contextmanager
def rate_limit_service(
    config: Mapping[str, Any], *, work_dir: Path, port: int, log: Path | None = None
) -> Iterator[Path]:
    """The stand-in as a child process on ``127.0.0.1:port`` until the block ends; yields its ledger. A process of
    its own: its gRPC threads never share a process that forks children (PREAMBLE, ``with_parent_death``)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    config_path = work_dir / "ratelimit-config.json"
    config_path.write_text(json.dumps(config, indent=1), encoding="utf-8")
    ledger = work_dir / "ratelimit-ledger.jsonl"
    ledger.write_text("", encoding="utf-8")
    log = log or work_dir / "ratelimit.log"
    argv = [sys.executable, "-m", MODULE, "--config", str(config_path), "--ledger", str(ledger), "--port", str(port)]
    with log.open("ab") as out:
        process = subprocess.Popen(
            with_parent_death(argv), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_listening(process, port, log)
        yield ledger
    finally:
        stop_group(process, STOP_TIMEOUT)


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise CommandError(f"the rate-limit stand-in exited with {process.returncode} (log: {log})")
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=1):
            return
        time.sleep(0.05)
    raise CommandError(f"the rate-limit stand-in did not listen on {port} within {READY_TIMEOUT:.0f} s (log: {log})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    server = serve(json.loads(args.config.read_text(encoding="utf-8")), args.ledger, args.port)
    stopped = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopped.set())
    stopped.wait()
    server.stop(grace=1).wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
