"""The ASGI application: OpenAI routes, errors in OpenAI's shape, and a readiness route for the pod."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from inference_platform.catalog.serving_contract import (
    OPENAI_CHAT_PATH,
    OPENAI_COMPLETIONS_PATH,
    OPENAI_HEALTH_PATH,
    OPENAI_MODELS_PATH,
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
from inference_platform.inference_image.openai_api.requests import parse_chat, parse_completion
from inference_platform.inference_image.openai_api.service import Service

DISCONNECT_POLL_S = 0.1
"""How often a non-streaming request checks that its client is still there."""


def build_app(service: Service) -> Starlette:
    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [service.model_card()]})

    async def model(request: Request) -> Response:
        name = request.path_params["model"]
        if name != service.served_model:
            raise unknown_model(name, service.served_model)
        return JSONResponse(service.model_card())

    async def chat(request: Request) -> Response:
        return await _generate(service, parse_chat(await _json(request)), request)

    async def completions(request: Request) -> Response:
        return await _generate(service, parse_completion(await _json(request)), request)

    async def health(request: Request) -> Response:
        ready, reason = await service.readiness.ready()
        if not ready:
            raise ApiError(503, f"{service.served_model} cannot generate: {reason}", type=UNAVAILABLE)
        return JSONResponse({"status": "ready", "model": service.served_model, "reason": reason})

    routes = [
        Route(OPENAI_MODELS_PATH, models, methods=["GET"]),
        Route(OPENAI_MODELS_PATH + "/{model:path}", model, methods=["GET"]),
        Route(OPENAI_CHAT_PATH, chat, methods=["POST"]),
        Route(OPENAI_COMPLETIONS_PATH, completions, methods=["POST"]),
        Route(OPENAI_HEALTH_PATH, health, methods=["GET"]),
    ]
    handlers = {ApiError: _api_error, HTTPException: _http_error, Exception: _server_error}
    app = Starlette(routes=routes, exception_handlers=handlers)
    app.state.service = service
    return app


async def _generate(service: Service, generation: Any, request: Request) -> Response:
    if generation.stream:
        # Starlette cancels the body's generator when the client disconnects, which closes the Triton stream.
        metered = request.headers.get(USAGE_METER_HEADER) == USAGE_METER_RUNNING
        events = service.stream(generation, metered=metered)
        return StreamingResponse(events, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
    # Nothing is written before the answer is whole, so a client that leaves is noticed only by asking.
    work = asyncio.ensure_future(service.complete(generation))
    while not work.done():
        await asyncio.wait({work}, timeout=DISCONNECT_POLL_S)
        if not work.done() and await request.is_disconnected():
            work.cancel()
            return Response(status_code=499)  # nobody reads it; nginx's "client closed request"
    return JSONResponse(work.result())


async def _json(request: Request) -> Any:
    body = await request.body()
    try:
        return json.loads(body)
    except ValueError as err:
        raise invalid(f"the request body is not valid JSON: {err}") from None


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
    return _error_response(ApiError(500, f"internal error: {type(err).__name__}", type=SERVER_ERROR))
