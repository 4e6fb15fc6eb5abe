"""Fixtures: every stack's serving settings and the test tokenizer (a real tokenizer.json)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference_platform.inference_image.runtime.tokenizer import Tokenizer, load_tokenizer
from inference_platform.inference_image.testing.assets import write_tokenizer
from inference_platform.settings import stack_files
from inference_platform.settings.serving import ServingSettings

STACKS = ("dev", "prod", "npu")


@pytest.fixture(scope="session")
def serving() -> dict[str, ServingSettings]:
    return {stack: stack_files.load(stack).serving for stack in STACKS}


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tokenizer(tmp_path_factory.mktemp("tokenizer"))


@pytest.fixture(scope="session")
def tokenizer(tokenizer_dir: Path) -> Tokenizer:
    return load_tokenizer(tokenizer_dir)
