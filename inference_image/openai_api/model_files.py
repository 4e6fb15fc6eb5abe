"""What the server reads from the model's Hugging Face files: the chat template, special tokens, the tokenizer.

The server counts a prompt's tokens as the engine will, before sending it, to refuse one over the input
limit in OpenAI's shape. The LLM API tokenizes a text prompt with ``add_special_tokens`` (default true:
``SamplingParams.add_special_tokens``); a chat template writes the BOS itself, so a chat prompt goes with
``add_special_tokens`` false (else a Llama-3 prompt starts with two ``<|begin_of_text|>``), a raw completion
prompt with true.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.inference_image.openai_api.chat_template import ChatTemplate

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
TEMPLATE_FILE = "chat_template.jinja"
"""Where newer transformers save the template instead of inside tokenizer_config.json."""
SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "pad_token", "unk_token")


class ModelFilesError(RuntimeError):
    """The tokenizer directory cannot serve the API; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Prompt:
    text: str
    """What the engine receives."""
    add_special_tokens: bool
    """Whether the engine's tokenizer adds its special tokens (the BOS) to ``text``."""
    tokens: int
    """How many tokens the engine will count for it."""


class Prompting:
    def __init__(self, directory: Path) -> None:
        from tokenizers import Tokenizer

        try:
            self.tokenizer = self._tokenizer = Tokenizer.from_file(str(directory / TOKENIZER_FILE))
        except Exception as err:  # the library raises a bare Exception for a missing or malformed file
            raise ModelFilesError(f"{directory / TOKENIZER_FILE}: cannot load ({err})") from None
        config = _read_json(directory / TOKENIZER_CONFIG)
        self.special_tokens = {k: v for k in SPECIAL_TOKEN_KEYS if (v := _token_text(config.get(k)))}
        source = _template_source(directory, config)
        self.chat_template = ChatTemplate(source, self.special_tokens) if source else None

    def prompt(self, text: str, *, templated: bool) -> Prompt:
        """``text`` as the engine gets it: a chat-templated prompt already holds its special tokens."""
        add = not templated
        return Prompt(
            text=text, add_special_tokens=add, tokens=len(self._tokenizer.encode(text, add_special_tokens=add).ids)
        )


def _template_source(directory: Path, config: dict[str, Any]) -> str | None:
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: transformers picks "default"
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    if isinstance(template, str) and template:
        return template
    path = directory / TEMPLATE_FILE
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):  # an AddedToken as saved: {"content": "<|begin_of_text|>", ...}
        value = value.get("content")
    return value if isinstance(value, str) and value else None


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ModelFilesError(f"{path}: {err}") from None
    if not isinstance(data, dict):
        raise ModelFilesError(f"{path}: expected a JSON object")
    return data
