"""The ASGI application: OpenAI routes, errors in OpenAI's shape, readiness and liveness for the pod, metrics.

Every request: its id is the client's ``X-Request-Id`` when that is a plain token (else a new one), echoed in the
response's ``X-Request-Id``, sent to Triton as the request id (the model's cancel-by-id and logs use it) and logged
with the edge's client id (``x-client-id``). A body that is not JSON, nests deeper than ``MAX_JSON_DEPTH`` or is
larger than ``MAX_BODY_BYTES`` is a 400 (413 for size), never a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from inference_platform.catalog.serving_contract import (
    CLIENT_ID_HEADER,
    OPENAI_CHAT_PATH,
    OPENAI_COMPLETIONS_PATH,
    OPENAI_HEALTH_PATH,
    OPENAI_LIVE_PATH,
    OPENAI_METRICS_PATH,
    OPENAI_MODELS_PATH,
    REQUEST_ID_HEADER,
    SERVED_MODEL_HEADER,
    USAGE_METER_HEADER,
    USAGE_METER_RUNNING,
)
from inference_platform.inference_image.openai_api.errors import (
    INVALID_REQUEST,
    NOT_FOUND,
    SERVER_ERROR,
    UNAVAILABLE,
    ApiError,
    invalid,
    unknown_model,
)
from inference_platform.inference_image.openai_api.metrics import client_id
from inference_platform.inference_image.openai_api.requests import parse_chat, parse_completion
from inference_platform.inference_image.openai_api.service import RequestContext, Service

LOG = logging.getLogger("openai_api")
DISCONNECT_POLL_S = 0.1
"""How often a non-streaming request checks that its client is still there."""
MAX_JSON_DEPTH = 64
"""Deepest nesting a request body may have (a schema within the guide limits needs far less)."""
MAX_BODY_BYTES = 16 * 1024 * 1024
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def build_app(service: Service, *, on_shutdown: Sequence[Callable[[], None]] = ()) -> Starlette:
    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [service.model_card()]})

    async def model(request: Request) -> Response:
        name = request.path_params["model"]
        if name != service.served_model:
            raise unknown_model(name, service.served_model)
        return JSONResponse(service.model_card())

    async def chat(request: Request) -> Response:
        limit = service.server.guide_limits.tools
        return await _generate(service, request, lambda raw: parse_chat(raw, max_tools=limit))

    async def completions(request: Request) -> Response:
        return await _generate(service, request, parse_completion)

    async def health(request: Request) -> Response:
        ready, reason = await service.readiness.ready()
        if not ready:
            raise ApiError(503, f"{service.served_model} cannot generate: {reason}", type=UNAVAILABLE)
        return JSONResponse({"status": "ready", "model": service.served_model, "reason": reason})

    async def live(request: Request) -> Response:
        alive, reason = await service.liveness.alive()
        if not alive:
            raise ApiError(503, f"{service.served_model}: {reason}", type=UNAVAILABLE)
        return JSONResponse({"status": "live", "reason": reason})

    async def metrics(request: Request) -> Response:
        return Response(await service.metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")

    routes = [
        Route(OPENAI_MODELS_PATH, models, methods=["GET"]),
        Route(OPENAI_MODELS_PATH + "/{model:path}", model, methods=["GET"]),
        Route(OPENAI_CHAT_PATH, chat, methods=["POST"]),
        Route(OPENAI_COMPLETIONS_PATH, completions, methods=["POST"]),
        Route(OPENAI_HEALTH_PATH, health, methods=["GET"]),
        Route(OPENAI_LIVE_PATH, live, methods=["GET"]),
        Route(OPENAI_METRICS_PATH, metrics, methods=["GET"]),
    ]
    handlers = {ApiError: _api_error, HTTPException: _http_error, Exception: _server_error}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        for hook in on_shutdown:
            hook()
        await service.engine.close()  # Triton's pooled loopback connections, closed rather than left to the collector

    app = Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)
    app.state.service = service
    app.add_middleware(_RequestIds, service=service)
    return app


class _RequestIds:
    """X-Request-Id in and out, the model that answered (``SERVED_MODEL_HEADER``), and the HTTP outcome counter, for
    every request (pure ASGI: streams untouched)."""

    def __init__(self, app: Any, service: Service) -> None:
        self.app, self.service = app, service
        # A header value is ASCII: a served name from the stack is (settings/serving.py model ids), one given on the
        # command line may not be, and must not fail every answer.
        self.served_model = service.served_model.encode("ascii", "backslashreplace")

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        given = headers.get(REQUEST_ID_HEADER, "")
        request_id = given if _REQUEST_ID.match(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["ctx"] = RequestContext(
            request_id=request_id, client=client_id(headers.get(CLIENT_ID_HEADER))
        )
        status = [500]
        served_model = self.served_model

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    (REQUEST_ID_HEADER.encode(), request_id.encode()),
                    (SERVED_MODEL_HEADER.encode(), served_model),
                ]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            path = scope.get("path", "")
            if path in (OPENAI_CHAT_PATH, OPENAI_COMPLETIONS_PATH):
                self.service.metrics.count_http(path, scope.get("method", ""), status[0])


async def _generate(service: Service, request: Request, parse: Callable[[Any], Any]) -> Response:
    ctx: RequestContext = request.state.ctx
    generation = parse(await _json(request))
    prompt, max_tokens = await service.admit(generation, ctx)
    LOG.info("request %s client %s: %s, %d prompt tokens", ctx.request_id, ctx.client, generation.kind, prompt.tokens)
    if generation.stream:
        # Starlette cancels the body's generator when the client disconnects, which closes the Triton stream.
        metered = request.headers.get(USAGE_METER_HEADER) == USAGE_METER_RUNNING
        events = service.events(generation, prompt, max_tokens, ctx, metered=metered)
        return StreamingResponse(events, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
    # Nothing is written before the answer is whole, so a client that leaves is noticed only by asking.
    work = asyncio.ensure_future(service.complete(generation, prompt, max_tokens, ctx))
    while not work.done():
        await asyncio.wait({work}, timeout=DISCONNECT_POLL_S)
        if not work.done() and await request.is_disconnected():
            work.cancel()
            return Response(status_code=499)  # nobody reads it; nginx's "client closed request"
    return JSONResponse(work.result())


async def _json(request: Request) -> Any:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ApiError(413, f"the request body is over {MAX_BODY_BYTES} bytes", type=INVALID_REQUEST)
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise ApiError(413, f"the request body is over {MAX_BODY_BYTES} bytes", type=INVALID_REQUEST)
    try:
        parsed = json.loads(body)
    except RecursionError:
        raise invalid(f"the request body nests deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as err:
        raise invalid(f"the request body is not valid JSON: {err}") from None
    if _too_deep(parsed):
        raise invalid(f"the request body nests deeper than {MAX_JSON_DEPTH} levels")
    return parsed


def _too_deep(value: Any) -> bool:
    """Whether containers nest deeper than MAX_JSON_DEPTH (iterative: no recursion limit to hit on the way)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, dict | list))
    return False


def _error_response(err: ApiError) -> Response:
    return JSONResponse(err.body(), status_code=err.status)


async def _api_error(request: Request, err: Exception) -> Response:
    assert isinstance(err, ApiError)
    return _error_response(err)


async def _http_error(request: Request, err: Exception) -> Response:
    assert isinstance(err, HTTPException)
    kind = NOT_FOUND if err.status_code == 404 else INVALID_REQUEST
    message = f"{request.method} {request.url.path}: {err.detail}"
    return _error_response(ApiError(err.status_code, message, type=kind))


async def _server_error(request: Request, err: Exception) -> Response:
    LOG.exception("request %s failed", getattr(getattr(request.state, "ctx", None), "request_id", "?"))
    return _error_response(ApiError(500, f"internal error: {type(err).__name__}", type=SERVER_ERROR))
