"""Without a key on the command line, verify reads the stack's first API key from Secrets Manager
(moto in-process: nothing reaches AWS)."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from inference_platform.errors import CommandError
from inference_platform.inferctl.verify.command import secrets_manager_key
from inference_platform.settings import stack_files


def test_the_first_api_key_comes_from_secrets_manager(aws_env):
    settings = stack_files.load("prod")
    with mock_aws():
        client = boto3.client("secretsmanager", region_name=settings.region.name)
        client.create_secret(Name=f"{settings.name_prefix}/inference/api-key-2-bbb", SecretString="second")
        client.create_secret(Name=f"{settings.name_prefix}/inference/api-key-1-aaa", SecretString="first")
        assert secrets_manager_key(settings) == "first"


def test_a_missing_secret_exits_2_saying_what_to_pass(aws_env):
    settings = stack_files.load("prod")
    with mock_aws(), pytest.raises(CommandError, match="pass --api-key-file") as err:
        secrets_manager_key(settings)
    assert err.value.exit_code == 2
