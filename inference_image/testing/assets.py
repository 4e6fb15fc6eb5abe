"""TEST DOUBLES: the files the CPU stand-in serves from — a tiny tokenizer and a stand-in engine.

The tokenizer is a real Hugging Face ``tokenizer.json`` (byte-level BPE without merges: one token per
UTF-8 byte, plus Llama 3's BOS/EOS names), so preprocessing and postprocessing run their production
code path on it. The engine directory has the layout of a TensorRT-LLM engine (``config.json`` and
one ``rank<i>.engine`` per rank) but the rank files are labelled placeholders, not engines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BOS = "<|begin_of_text|>"
EOS = "<|end_of_text|>"
STAND_IN_MARKER = b"inferctl CPU stand-in engine: a test double, not a TensorRT engine\n"


def write_tokenizer(directory: Path) -> Path:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tokenizer = Tokenizer(models.BPE(vocab={ch: i for i, ch in enumerate(alphabet)}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(BOS, special=True), AddedToken(EOS, special=True)])
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    config = {"bos_token": BOS, "eos_token": EOS, "tokenizer_class": "PreTrainedTokenizerFast"}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return directory


def write_engine(directory: Path, *, world_size: int = 1, build: dict[str, Any] | None = None) -> Path:
    """A stand-in engine directory for ``world_size`` ranks; ``build`` lands in config.json."""
    directory.mkdir(parents=True, exist_ok=True)
    config = {
        "test_double": "inferctl CPU stand-in",
        "pretrained_config": {
            "architecture": "LlamaForCausalLM",
            "mapping": {"world_size": world_size, "tp_size": world_size, "pp_size": 1},
        },
        "build_config": build or {},
    }
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    for rank in range(world_size):
        (directory / f"rank{rank}.engine").write_bytes(STAND_IN_MARKER)
    return directory
