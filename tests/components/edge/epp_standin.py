"""A stand-in for llm-d's endpoint picker on the wire: ``python -m tests.components.edge.epp_standin --port P --pick
IP:PORT --record FILE`` serves Envoy's ext_proc ``Process`` stream and answers exactly in the order and shape
llm-d-router v0.10.0's EPP does (its scheduling is not modelled: it always picks ``--pick``):

- request headers with end of stream (no body): the header response with the pick at once (``pkg/epp/handlers/
  request.go`` ``HandleRequestHeaders``: ``fallbackToRandomEndpoint``);
- request headers with a body to follow: no answer (``HandleRequestHeaders`` returns nil);
- request body chunks: buffered; at end of stream the header response (``x-gateway-destination-endpoint``,
  ``Content-Length`` of the body, ``ClearRouteCache``: request.go ``generateRequestHeaderResponse`` and
  ``generateHeaders``), then the body back as ``StreamedBodyResponse`` chunks of at most 62000 bytes, the last with
  end of stream (``pkg/common/envoy/chunking.go``; ``server.go`` ``updateStateAndSendIfNeeded``: header, then body);
- response headers, body and trailers: answered in kind, the body passed back as streamed chunks
  (``server.go``).

Each event is appended to ``--record`` as a JSON line (``{"stream": n, "event": ...}``), so a test can read the
order in which the picker saw the body and answered the headers.
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from tests.components.edge.ext_proc_wire import MESSAGES, METHOD

BODY_BYTE_LIMIT = 62000
"""pkg/common/envoy/chunking.go ``BodyByteLimit``."""
DESTINATION_HEADER = "x-gateway-destination-endpoint"
_streams = itertools.count()
_lock = threading.Lock()


class Picker:
    def __init__(self, pick: str, record: Path) -> None:
        self.pick, self.record = pick, record

    def _log(self, stream: int, event: str) -> None:
        with _lock, self.record.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"stream": stream, "event": event}) + "\n")

    def process(self, requests: Iterator[Any], context: Any) -> Iterator[Any]:
        stream = next(_streams)
        body = bytearray()
        for request in requests:
            kind = request.WhichOneof("request")
            if kind == "request_headers":
                self._log(stream, "request_headers")
                if request.request_headers.end_of_stream:
                    self._log(stream, "answer headers")
                    yield self._headers(0)
            elif kind == "request_body":
                body += request.request_body.body
                if not request.request_body.end_of_stream:
                    self._log(stream, "request_body chunk")
                    continue
                self._log(stream, f"request_body end ({len(body)} bytes)")
                self._log(stream, "answer headers")
                yield self._headers(len(body))
                yield from _chunks(bytes(body), "request_body")
            elif kind == "response_headers":
                yield MESSAGES["ProcessingResponse"](response_headers=MESSAGES["HeadersResponse"]())
            elif kind == "response_body":
                chunk = request.response_body
                yield from _chunks(chunk.body, "response_body", end=chunk.end_of_stream)
            elif kind in ("request_trailers", "response_trailers"):
                yield MESSAGES["ProcessingResponse"](**{kind: MESSAGES["TrailersResponse"]()})

    def _headers(self, size: int) -> Any:
        response = MESSAGES["ProcessingResponse"]()
        common = response.request_headers.response
        common.clear_route_cache = True
        for key, value in ((DESTINATION_HEADER, self.pick), *((("content-length", str(size)),) if size else ())):
            option = common.header_mutation.set_headers.add()
            option.header.key = key
            option.header.raw_value = value.encode()
        return response


def _chunks(body: bytes, side: str, *, end: bool = True) -> list[Any]:
    pieces = [body[i : i + BODY_BYTE_LIMIT] for i in range(0, len(body), BODY_BYTE_LIMIT)] or [b""]
    out = []
    for index, piece in enumerate(pieces):
        response = MESSAGES["ProcessingResponse"]()
        streamed = getattr(response, side).response.body_mutation.streamed_response
        streamed.body = piece
        streamed.end_of_stream = end and index == len(pieces) - 1
        out.append(response)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pick", required=True)
    parser.add_argument("--record", type=Path, required=True)
    args = parser.parse_args()
    picker = Picker(args.pick, args.record)
    handler = grpc.method_handlers_generic_handler(
        "envoy.service.ext_proc.v3.ExternalProcessor",
        {
            "Process": grpc.stream_stream_rpc_method_handler(
                picker.process,
                request_deserializer=MESSAGES["ProcessingRequest"].FromString,
                response_serializer=lambda m: m.SerializeToString(),
            )
        },
    )
    assert METHOD.endswith("ExternalProcessor/Process")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{args.port}")
    server.start()
    print("ready", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
