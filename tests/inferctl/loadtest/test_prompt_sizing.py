"""Prompts sized by the served model's tokenizer and clamped to the server's limits (issue 17 §8).

The CPU stand-in's tokenizer is byte-level (one token per byte): sized in words, the dev stack's
verification prompts (ISL 512 + 3 x 128) came to 4,119 tokens and the server refused them
(``maxInputLen`` 4096). With the words' measured costs a prompt is about the tokens asked, and with
or without a measure it never exceeds ``maxInputLen`` nor ``maxSeqLen - max_tokens``.
"""

from __future__ import annotations

import random

import pytest

from inference_platform.inference_image.runtime.tokenizer import Tokenizer, load_tokenizer
from inference_platform.inference_image.testing.assets import write_tokenizer
from inference_platform.loadgen.config import LoadConfig, PromptSizing, Shape, SizeDistribution
from inference_platform.loadgen.requests import WORDS, plan_request, prompt, prompt_limit

DEV_LIMITS = {"max_input_tokens": 4096, "max_seq_len": 8192}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Tokenizer:
    """The CPU stand-in's tokenizer (byte-level: one token per byte), as serve-local serves it."""
    return load_tokenizer(write_tokenizer(tmp_path_factory.mktemp("tokenizer")))


def _tokens(tokenizer: Tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=True))


def _measured(tokenizer: Tokenizer, **limits: int) -> PromptSizing:
    special = _tokens(tokenizer, "x") - 1
    words = tuple(_tokens(tokenizer, " " + w) - special for w in WORDS)
    return PromptSizing(word_tokens=words, special_tokens=special, source="test", **limits)


def _config(sizing: PromptSizing, isl: SizeDistribution, osl: SizeDistribution) -> LoadConfig:
    return LoadConfig(
        url="http://127.0.0.1:8000",
        shape=Shape(kind="concurrency"),
        max_requests=1,
        duration_s=1.0,
        isl=isl,
        osl=osl,
        prompt_sizing=sizing,
    )


def test_word_sized_prompts_of_the_dev_defaults_exceed_max_input_len_with_a_byte_tokenizer(tokenizer):
    # What the old sizing sent (one word per token): the failure the issue reports.
    rng = random.Random(0)
    longest = max(_tokens(tokenizer, prompt(512 + 3 * 128, rng)) for _ in range(50))
    assert longest > 4096


@pytest.mark.parametrize("measured", [True, False])
def test_prompts_never_exceed_the_servers_limits(tokenizer, measured):
    sizing = _measured(tokenizer, **DEV_LIMITS) if measured else PromptSizing(**DEV_LIMITS)
    config = _config(sizing, SizeDistribution(mean=3000, spread=800), SizeDistribution(mean=128, spread=32))
    rng = random.Random(1)
    for _ in range(200):
        planned = plan_request(config, rng)
        count = _tokens(tokenizer, planned.body["messages"][0]["content"])
        assert count <= 4096 and count + planned.max_tokens <= 8192


def test_max_seq_len_leaves_room_for_max_tokens():
    sizing = PromptSizing(max_input_tokens=4096, max_seq_len=4200)
    assert prompt_limit(sizing, 500) == 3700
    assert prompt_limit(PromptSizing(), 500) is None


def test_measured_prompts_are_about_the_tokens_asked(tokenizer):
    sizing = _measured(tokenizer, **DEV_LIMITS)
    rng = random.Random(2)
    counts = [_tokens(tokenizer, prompt(512, rng, sizing, limit=4096)) for _ in range(100)]
    assert all(512 <= c <= 512 + 16 for c in counts)  # at most one word (and the lead) over


def test_sizing_travels_to_the_workers_as_json(tokenizer):
    config = _config(_measured(tokenizer, **DEV_LIMITS), SizeDistribution(mean=8), SizeDistribution(mean=8))
    assert LoadConfig.from_json(config.to_json()) == config
