"""gRPC side of ``inferctl smoke``: the ensemble through a bidirectional stream (tritonclient.grpc).

A decoupled ensemble answers only on the streaming RPC, with or without ``stream``; the final
response is marked by ``triton_final_response`` (requested with ``enable_empty_final_response``).
"""

from __future__ import annotations

import queue
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from inference_platform.inferctl.serving.smoke_http import SmokeFailure
from inference_platform.inference_image.defaults import GRPC_RESTRICTED_HEADER_PREFIX
from inference_platform.loadgen.latency import StreamTiming


def stream_generate(
    url: str,
    *,
    headers: Mapping[str, str],
    prompt: str,
    max_tokens: int,
    stream: bool,
    timeout: float,
    tls: bool = False,
    extra: Mapping[str, Any] | None = None,
    ca_file: str | None = None,
    through_edge: bool = False,
) -> tuple[str, StreamTiming]:
    """One request on the stream; the text and the arrival time of each text-bearing response.

    ``headers`` are the HTTP ones: restricted-protocol keys travel under tritonserver's gRPC prefix,
    except ``through_edge``, where the gateway reads them as they are (and strips the key).
    """
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    results: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client = grpcclient.InferenceServerClient(url, ssl=tls, root_certificates=ca_file)
    inputs = [
        _tensor(grpcclient, "text_input", np.array([[prompt.encode()]], dtype=object), "BYTES"),
        _tensor(grpcclient, "max_tokens", np.array([[max_tokens]], dtype=np.int32), "INT32"),
        _tensor(grpcclient, "stream", np.array([[stream]], dtype=bool), "BOOL"),
    ]
    for name, value in (extra or {}).items():
        inputs.append(_tensor(grpcclient, name, np.array([[value.encode()]], dtype=object), "BYTES"))
    texts: list[str] = []
    times: list[float] = []
    finished = False
    try:
        metadata = dict(headers) if through_edge else grpc_headers(headers)
        client.start_stream(callback=lambda result, error: results.put((result, error)), headers=metadata)
        start = time.monotonic()
        client.async_stream_infer("ensemble", inputs, request_id="smoke", enable_empty_final_response=True)
        deadline = start + timeout
        while True:
            try:
                result, error = results.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise SmokeFailure(f"gRPC stream: no final response within {timeout:.0f} s") from None
            if error is not None:
                raise SmokeFailure(f"gRPC stream: {error}")
            text = result.as_numpy("text_output")
            if text is not None and text.size:
                piece = b"".join(text.reshape(-1)).decode("utf-8", errors="replace")
                if piece:
                    times.append(time.monotonic())
                    texts.append(piece)
            if result.get_response().parameters["triton_final_response"].bool_param:
                finished = True
                break
    except InferenceServerException as err:
        # A broken stream reports its cause through the callback; that is the useful message.
        reported = [str(e) for _, e in _drain(results) if e is not None]
        raise SmokeFailure(f"gRPC stream: {reported[0] if reported else err.message()}") from None
    finally:
        # A finished stream is half-closed and left to end on the server's side. Cancelling it right after
        # the final response races tritonserver 2.51's stream bookkeeping: now and then the cancelled
        # request's state leaks and pins the ensemble, which then never unloads, so the server's drain
        # ends in "Exit timeout expired" (exit 1). Only a stream abandoned on an error is cancelled.
        client.stop_stream(cancel_requests=not finished)
        client.close()
    return "".join(texts), StreamTiming(start=start, token_times=tuple(times))


def grpc_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {f"{GRPC_RESTRICTED_HEADER_PREFIX}{name.lower()}": value for name, value in headers.items()}


def _drain(results: queue.Queue[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    drained = []
    while not results.empty():
        drained.append(results.get_nowait())
    return drained


def _tensor(grpcclient: Any, name: str, value: np.ndarray, datatype: str) -> Any:
    tensor = grpcclient.InferInput(name, list(value.shape), datatype)
    tensor.set_data_from_numpy(value)
    return tensor
