"""What the OpenAI server takes from upstream, held to the source it was read from.

- The chat template environment: huggingface/transformers ``src/transformers/utils/chat_template_utils.py`` @
  5e43e2e892453b405ce6d2cb94387b3a3213f30a, ``_compile_jinja_template``: ``ImmutableSandboxedEnvironment(
  trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols])``, ``tojson``
  = ``json.dumps(ensure_ascii=False)`` (no HTML escaping), globals ``raise_exception`` and ``strftime_now``.
  (AssistantTracker only marks assistant spans for training masks; rendering is unchanged without it.)
- The error shape: the official client (the pinned ``openai`` package, read here from its installed source)
  reads ``body["error"]`` and picks its exception class by status.
"""

from __future__ import annotations

import inspect

import openai
from jinja2.sandbox import ImmutableSandboxedEnvironment

from inference_platform.inference_image.openai_api.chat_template import ChatTemplate

TRANSFORMERS = "huggingface/transformers src/transformers/utils/chat_template_utils.py @ 5e43e2e8"


def test_the_template_environment_is_the_one_transformers_builds():
    env = ChatTemplate("", {})._template.environment
    assert isinstance(env, ImmutableSandboxedEnvironment), TRANSFORMERS
    assert (env.trim_blocks, env.lstrip_blocks) == (True, True), TRANSFORMERS
    assert set(env.extensions) == {"jinja2.ext.LoopControlExtension"}, TRANSFORMERS
    assert {"raise_exception", "strftime_now"} <= set(env.globals), TRANSFORMERS
    assert ChatTemplate("{{ '<b>é</b>' | tojson }}", {}).render([]) == '"<b>é</b>"', TRANSFORMERS


def test_the_official_client_reads_our_error_shape_and_statuses():
    source = inspect.getsource(openai.OpenAI._make_status_error)
    assert 'body.get("error", body)' in source
    for status, error in ((400, "BadRequestError"), (404, "NotFoundError"), (422, "UnprocessableEntityError")):
        assert f"if response.status_code == {status}:\n            return _exceptions.{error}" in source
    assert "if response.status_code >= 500:\n            return _exceptions.InternalServerError" in source
