"""TEST DOUBLE: a Hugging Face checkpoint directory without weights, for the CPU stand-in and the server.

What the server and the stand-in read from a real checkpoint: ``config.json`` (architecture,
``max_position_embeddings``), a byte-level BPE ``tokenizer.json`` (one token per UTF-8 byte, no merges, plus
Llama 3's special tokens), ``tokenizer_config.json`` with a chat template in Llama 3's header/turn format
(written here for the test, not Meta's file) and ``generation_config.json`` with Llama 3.1's three stop
tokens. No weights: the stand-in has no model to load.
"""

from __future__ import annotations

import json
from pathlib import Path

BOS = "<|begin_of_text|>"
END_OF_TEXT = "<|end_of_text|>"
START_HEADER = "<|start_header_id|>"
END_HEADER = "<|end_header_id|>"
EOT = "<|eot_id|>"
EOM = "<|eom_id|>"
SPECIAL = (BOS, END_OF_TEXT, START_HEADER, END_HEADER, EOT, EOM)
CONTEXT = 8192
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% if tools %}"
    "<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n"
    "{% if messages and messages[0]['role'] in ['system', 'developer'] %}{{ messages[0]['content'] | trim }}{% endif %}"
    "<|eot_id|>"
    "{% endif %}"
    "{% set ns = namespace(tools_shown=false) %}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'developer', 'user', 'assistant', 'tool'] %}"
    "{{ raise_exception('unknown role ' + message['role']) }}"
    "{% endif %}"
    "{% if tools and loop.first and message['role'] in ['system', 'developer'] %}"
    "{% elif message['role'] == 'tool' %}"
    "<|start_header_id|>ipython<|end_header_id|>\n\n{{ message['content'] | trim }}<|eot_id|>"
    "{% elif message['role'] == 'assistant' and message.get('tool_calls') %}"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
    "{% for call in message['tool_calls'] %}"
    "{{ {'name': call['function']['name'], 'parameters': call['function']['arguments']} | tojson }}"
    "{% if not loop.last %}; {% endif %}"
    "{% endfor %}<|eot_id|>"
    "{% else %}"
    "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    "{% if tools and message['role'] == 'user' and not ns.tools_shown %}"
    "{% set ns.tools_shown = true %}"
    "Given the following functions, respond with a JSON for a function call with its proper arguments that best "
    "answers the given prompt. Respond in the format "
    '{"name": function name, "parameters": dictionary of argument name and its value}.\n\n'
    "{% for tool in tools %}{{ tool | tojson }}\n\n{% endfor %}"
    "{% endif %}"
    "{{ message['content'] | trim }}<|eot_id|>"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
"""Written for the tests, not Meta's file: Llama 3's header/turn format, and with ``tools`` Meta's documented JSON
tool calling for Llama 3.1 (llama.com "Llama 3.1 prompt formats", JSON based tool calling; the same shape as
vllm-project/vllm examples/tool_chat_template_llama3.1_json.jinja): ``Environment: ipython`` in the system turn, the
tools as JSON in the first user turn with the instruction to answer ``{"name": ..., "parameters": ...}``, earlier calls
rendered in that format and tool results in the ``ipython`` role."""


def write_checkpoint(directory: Path, *, context: int = CONTEXT) -> Path:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tokenizer = Tokenizer(models.BPE(vocab={ch: i for i, ch in enumerate(alphabet)}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(t, special=True) for t in SPECIAL])
    bos_id = tokenizer.token_to_id(BOS)
    tokenizer.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, bos_id)])
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    ids = {t: tokenizer.token_to_id(t) for t in SPECIAL}
    _write(
        directory / "tokenizer_config.json",
        {
            "bos_token": BOS,
            "eos_token": EOT,
            "tokenizer_class": "PreTrainedTokenizerFast",
            "model_max_length": context,
            "chat_template": CHAT_TEMPLATE,
        },
    )
    _write(
        directory / "generation_config.json",
        {
            "bos_token_id": ids[BOS],
            "eos_token_id": [ids[END_OF_TEXT], ids[EOM], ids[EOT]],
        },
    )
    _write(
        directory / "config.json",
        {
            "test_double": "inference-platform CPU stand-in checkpoint (no weights)",
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "max_position_embeddings": context,
            "vocab_size": tokenizer.get_vocab_size(with_added_tokens=True),
            "bos_token_id": ids[BOS],
            "eos_token_id": [ids[END_OF_TEXT], ids[EOM], ids[EOT]],
        },
    )
    return directory


def _write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
