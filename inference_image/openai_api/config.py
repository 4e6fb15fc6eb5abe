"""The server's settings, read from the files the ``tensorrt_llm`` model itself loads: one source for both.

``<model dir>/config.pbtxt`` says whether the model streams (``model_transaction_policy { decoupled }``);
``<model dir>/1/model.yaml`` holds the LLM arguments: the checkpoint (its tokenizer files and chat template),
``max_input_len`` and ``max_seq_len``. What model.yaml leaves out takes the LLM API's default
(``tensorrt_llm/llmapi/llm_args.py``, TensorRT-LLM 1.2: ``max_input_len`` 1024; ``max_seq_len`` from the
checkpoint's ``config.json`` ``max_position_embeddings``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_PBTXT = "config.pbtxt"
MODEL_YAML = Path("1") / "model.yaml"
LLM_API_DEFAULT_MAX_INPUT_LEN = 1024
"""``BaseLlmArgs.max_input_len`` default (TensorRT-LLM 1.2, ``tensorrt_llm/llmapi/llm_args.py``)."""
_DECOUPLED = re.compile(r"model_transaction_policy\s*\{[^}]*decoupled\s*:\s*(true|false)", re.IGNORECASE)


class ServerConfigError(ValueError):
    """The model's files cannot configure the server; the message names the file and the key."""


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    served_model: str
    tokenizer_dir: Path
    max_input_len: int
    max_seq_len: int
    decoupled: bool


def from_model_dir(model_dir: Path, *, served_model: str, tokenizer_dir: Path | None = None) -> ServerConfig:
    import yaml

    pbtxt, path = model_dir / CONFIG_PBTXT, model_dir / MODEL_YAML
    try:
        config_text = pbtxt.read_text(encoding="utf-8")
        args = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ServerConfigError(f"{model_dir}: cannot read the model's configuration ({err})") from None
    if not isinstance(args, dict):
        raise ServerConfigError(f"{path}: expected a mapping of LLM arguments")
    found = _DECOUPLED.search(config_text)
    checkpoint = tokenizer_dir or Path(str(args.get("tokenizer") or args.get("model") or ""))
    if not checkpoint.is_dir():
        raise ServerConfigError(f"{path}: tokenizer/model {str(checkpoint)!r} is not a directory on this machine")
    max_input_len = _positive(args.get("max_input_len", LLM_API_DEFAULT_MAX_INPUT_LEN), path, "max_input_len")
    max_seq_len = args.get("max_seq_len")
    if max_seq_len is None:
        max_seq_len = _checkpoint_context(checkpoint, path)
    max_seq_len = _positive(max_seq_len, path, "max_seq_len")
    if max_input_len >= max_seq_len:
        raise ServerConfigError(f"{path}: max_input_len {max_input_len} leaves no room below max_seq_len {max_seq_len}")
    return ServerConfig(
        served_model=served_model,
        tokenizer_dir=checkpoint,
        max_input_len=max_input_len,
        max_seq_len=max_seq_len,
        decoupled=found is not None and found.group(1).lower() == "true",
    )


def _checkpoint_context(checkpoint: Path, path: Path) -> Any:
    try:
        return json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))["max_position_embeddings"]
    except (OSError, ValueError, KeyError):
        raise ServerConfigError(
            f"{path}: max_seq_len is unset and {checkpoint / 'config.json'} gives no max_position_embeddings"
        ) from None


def _positive(value: Any, path: Path, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ServerConfigError(f"{path}: {key} must be a positive integer, got {value!r}")
    return value
