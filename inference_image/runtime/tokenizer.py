"""Tokenizers behind one small interface, loaded from the model's tokenizer artifact.

Production reads the Hugging Face ``tokenizer.json`` shipped with the model (through the
``tokenizers`` library, which the TensorRT-LLM and Neuron images already carry), plus the special
tokens from ``tokenizer_config.json`` / ``generation_config.json``. Another tokenizer plugs in by
implementing ``Tokenizer`` and registering its marker file in ``LOADERS``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

HF_TOKENIZER_FILE = "tokenizer.json"
HF_TOKENIZER_CONFIG = "tokenizer_config.json"
HF_GENERATION_CONFIG = "generation_config.json"


class TokenizerError(RuntimeError):
    """The tokenizer directory is unusable; the message names the directory and what is wrong."""


class Tokenizer(Protocol):
    vocab_size: int
    end_id: int
    """Token that ends a generation when the request names none (the model's EOS)."""
    pad_id: int

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]: ...

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool) -> str: ...


class HuggingFaceTokenizer:
    """A ``tokenizers`` tokenizer with the EOS/PAD choice Hugging Face ``transformers`` would make."""

    def __init__(self, directory: Path) -> None:
        from tokenizers import Tokenizer as _HfTokenizer

        try:
            self._tokenizer = _HfTokenizer.from_file(str(directory / HF_TOKENIZER_FILE))
        except Exception as err:  # the library raises a bare Exception for malformed files
            raise TokenizerError(f"{directory / HF_TOKENIZER_FILE}: cannot load ({err})") from None
        self.vocab_size = self._tokenizer.get_vocab_size(with_added_tokens=True)
        config = _read_json(directory / HF_TOKENIZER_CONFIG)
        generation = _read_json(directory / HF_GENERATION_CONFIG)
        self.end_id = self._special_id(config.get("eos_token"), generation.get("eos_token_id"), "eos", directory)
        pad = config.get("pad_token")
        self.pad_id = self._special_id(pad, generation.get("pad_token_id"), "pad", directory) if pad else self.end_id

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=add_special_tokens).ids)

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool) -> str:
        return self._tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def _special_id(self, token: Any, generation_id: Any, what: str, directory: Path) -> int:
        if isinstance(token, dict):
            token = token.get("content")
        if isinstance(token, str):
            found = self._tokenizer.token_to_id(token)
            if found is None:
                raise TokenizerError(f"{directory}: {what} token {token!r} is not in the vocabulary")
            return found
        # generation_config lists several stop ids for chat models; the first is the base EOS.
        if isinstance(generation_id, list) and generation_id:
            generation_id = generation_id[0]
        if isinstance(generation_id, int):
            return generation_id
        raise TokenizerError(f"{directory}: no {what} token in {HF_TOKENIZER_CONFIG} or {HF_GENERATION_CONFIG}")


# marker file -> loader; the first marker present in the directory wins.
LOADERS: dict[str, Callable[[Path], Tokenizer]] = {HF_TOKENIZER_FILE: HuggingFaceTokenizer}


def load_tokenizer(directory: str | Path) -> Tokenizer:
    path = Path(directory)
    if not path.is_dir():
        raise TokenizerError(f"tokenizer directory {path} does not exist")
    for marker, loader in LOADERS.items():
        if (path / marker).is_file():
            return loader(path)
    raise TokenizerError(f"tokenizer directory {path} holds none of {', '.join(LOADERS)}")


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise TokenizerError(f"{path}: {err}") from None
    if not isinstance(data, dict):
        raise TokenizerError(f"{path}: expected a JSON object")
    return data
