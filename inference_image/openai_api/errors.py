"""OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}`` with the HTTP status clients expect.

The official client turns the status into its exception class (400 BadRequestError, 404 NotFoundError,
422 UnprocessableEntityError, 429 RateLimitError, 5xx InternalServerError: ``openai._client.OpenAI.
_make_status_error``) and reads ``message``/``type``/``param``/``code`` from the ``error`` object.
"""

from __future__ import annotations

from typing import Any

INVALID_REQUEST = "invalid_request_error"
NOT_FOUND = "not_found_error"
SERVER_ERROR = "server_error"
UNAVAILABLE = "service_unavailable"
CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
"""OpenAI's ``code`` for a prompt (or prompt + max_tokens) beyond the model's context."""
MODEL_NOT_FOUND = "model_not_found"


class ApiError(Exception):
    """A request that gets an OpenAI error body; ``param`` names the request field at fault."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = INVALID_REQUEST,
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def invalid(message: str, *, param: str | None = None, code: str | None = None) -> ApiError:
    return ApiError(400, message, param=param, code=code)


def unknown_model(name: str, served: str) -> ApiError:
    return ApiError(
        404,
        f"The model '{name}' does not exist; this server serves '{served}'",
        type=NOT_FOUND,
        param="model",
        code=MODEL_NOT_FOUND,
    )
