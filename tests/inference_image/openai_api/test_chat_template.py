"""The chat template renders as transformers renders it, in jinja2's sandbox."""

from __future__ import annotations

import pytest

from inference_platform.inference_image.openai_api.chat_template import ChatTemplate, ChatTemplateError
from inference_platform.inference_image.openai_api.model_files import Prompting
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint

SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}


def test_the_template_sees_messages_the_generation_prompt_and_the_special_tokens():
    source = (
        "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}]\n  {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}{{ {'k': 'é'} | tojson }}"
    )
    text = ChatTemplate(source, SPECIAL).render([{"role": "user", "content": "hi"}])
    # trim_blocks drops the newline after a block tag, lstrip_blocks the indentation before one; tojson keeps é
    assert text == '<s>[user]\n  hi\n[assistant]{"k": "é"}'


def test_raise_exception_and_sandbox_violations_are_template_errors():
    refuse = "{% if messages[0]['role'] != 'user' %}{{ raise_exception('user first') }}{% endif %}"
    with pytest.raises(ChatTemplateError, match="user first"):
        ChatTemplate(refuse, SPECIAL).render([{"role": "assistant", "content": "x"}])
    with pytest.raises(ChatTemplateError):
        ChatTemplate("{{ messages.__class__.__mro__ }}", SPECIAL).render([])
    with pytest.raises(ChatTemplateError):
        ChatTemplate("{% do messages.append(1) %}", SPECIAL)  # no 'do' extension, as in transformers
    with pytest.raises(ChatTemplateError):
        ChatTemplate("{{ messages.append(1) }}", SPECIAL).render([])  # immutable sandbox


def test_a_chat_prompt_is_counted_without_a_second_bos_and_a_completion_prompt_with_one(tmp_path):
    prompting = Prompting(write_checkpoint(tmp_path / "ckpt"))
    text = prompting.chat_template.render([{"role": "user", "content": "héllo"}])
    assert text.startswith("<|begin_of_text|>")
    chat = prompting.prompt(text, templated=True)
    assert not chat.add_special_tokens
    completion = prompting.prompt("héllo", templated=False)
    assert completion.add_special_tokens and completion.tokens == len("héllo".encode()) + 1  # BOS + bytes
