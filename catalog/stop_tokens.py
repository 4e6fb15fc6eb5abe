"""The full list of tokens that end a model's answer, per catalog model.

The LLM API stops on the tokenizer's EOS by default; an Instruct model also ends turns and tool calls
with tokens of its own, and a server that does not stop on them runs on into a new turn. The serving
model adds these to every request's stop list (``inference_image/llmapi``). A model outside this table
(Mixtral, DeepSeek-V3: one EOS; a custom ``serving.architecture``) stops on its tokenizer's EOS only.
"""

from __future__ import annotations

from types import MappingProxyType

# Llama 3.1: <|eot_id|> ends a turn, <|eom_id|> ends a message that calls a tool (ipython), <|end_of_text|>
# ends the text; the Instruct checkpoints' generation_config.json lists the three ids (128001, 128008,
# 128009) as eos_token_id (issue 20, "the full stop-token list of the model").
_LLAMA_31 = ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>")

STOP_TOKENS = MappingProxyType(
    {
        "Llama-3.1-8B": _LLAMA_31,
        "Llama-3.1-70B": _LLAMA_31,
        "Llama-3.1-405B": _LLAMA_31,
    }
)


def stop_tokens(model: str) -> tuple[str, ...]:
    """The stop strings of catalog model ``model`` (empty for a model the catalog does not know)."""
    return STOP_TOKENS.get(model, ())
