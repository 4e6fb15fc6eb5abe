"""TEST DOUBLES: a tiny tokenizer for the tests of the runtime and the load generator.

The tokenizer is a real Hugging Face ``tokenizer.json`` (byte-level BPE without merges: one token per
UTF-8 byte, plus Llama 3's BOS/EOS names), so the production tokenizer code path runs on it.
"""

from __future__ import annotations

import json
from pathlib import Path

BOS = "<|begin_of_text|>"
EOS = "<|end_of_text|>"


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
