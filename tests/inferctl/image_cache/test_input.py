"""``inferctl image-cache build``'s bad input exits 2 naming the flag, before any AWS call."""

from __future__ import annotations

import pytest

from inference_platform.inferctl.cli import main
from inference_platform.inferctl.image_cache import command
from inference_platform.settings import cold_start

from .conftest import DIGEST, IMAGE

VALID = {"--image": IMAGE, "--ami": "ami-0123456789abcdef0", "--instance-profile": "node",
         "--kms-key-id": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"}  # fmt: skip


def argv(values):
    return ["image-cache", "build", *(x for k, v in values.items() if v is not None for x in (k, v))]


@pytest.mark.parametrize(
    ("change", "flag"),
    [
        ({"--image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/serving/trtllm:1.2.0"}, "--image"),
        ({"--image": f"trtllm@{DIGEST}"}, "--image"),
        ({"--image": f"ghcr.io/x/y@{DIGEST};reboot"}, "--image"),
        ({"--size-gib": "19"}, "--size-gib"),
        ({"--size-gib": "16385"}, "--size-gib"),
        ({"--timeout-minutes": "0"}, "--timeout-minutes"),
        ({"--subnet-id": "subnet-1; rm -rf /"}, "--subnet-id"),
        ({"--kms-key-id": ""}, "--kms-key-id"),
        ({"--ami": None}, "--kubernetes-version"),
        ({"--kubernetes-version": "1.33"}, "--ami"),
    ],
)
def test_bad_input_exits_2_naming_the_flag(aws_env, capsys, change, flag):
    code = main(argv({**VALID, **change}))
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.splitlines()[-1].startswith(f"inferctl image-cache: {flag}: ")


@pytest.mark.parametrize("missing", ["--kms-key-id", "--image", "--instance-profile"])
def test_a_missing_required_flag_exits_2_naming_it(aws_env, capsys, missing):
    with pytest.raises(SystemExit) as exit_:
        main(argv({**VALID, missing: None}))
    assert exit_.value.code == 2 and missing in capsys.readouterr().err


def test_the_size_range_is_the_settings_one():
    assert (command.MIN_SIZE_GIB, command.MAX_SIZE_GIB) == (cold_start.MIN_CACHE_GIB, cold_start.MAX_CACHE_GIB)
