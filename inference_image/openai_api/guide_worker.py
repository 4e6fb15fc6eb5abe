"""The guide compile worker (``guides.GuideChecker`` runs it): compiles each guide it reads with the engine's compiler.

One JSON line in (``{"kind": "json_schema" | "json_object" | "regex" | "ebnf", "guide": ...}``), one out
(``{"ok": true}``, ``{"ok": false, "error": ...}`` or ``{"ok": false, "memory": true}``). Once the tokenizer and the
compiler are loaded, its address space is capped at what it holds plus ``--memory-mib``: a compile that needs more
fails with MemoryError here, in this process, never in the model's. The deadline is the parent's (it kills this
process's session).

Compilers: ``xgrammar`` as TensorRT-LLM's GuidedDecoder builds it (``GrammarCompiler`` over the tokenizer's
``TokenizerInfo``; ``compile_json_schema`` with xgrammar's defaults, ``compile_builtin_json_grammar``,
``compile_regex``, ``compile_grammar``: ``_torch/pyexecutor/grammar_matcher.py``, 1.2-era copy), or ``outlines``:
the CPU stand-in's own index (``testing/cpu_llm_api/guided.py``), which is what the local stack's engine compiles.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from pathlib import Path
from typing import Any

GUIDE_KEYWORDS = {"json_schema": "json", "regex": "regex", "ebnf": "grammar"}


def _xgrammar(tokenizer_dir: Path) -> Any:
    import xgrammar  # type: ignore[import-not-found]  # only in the GPU image (TensorRT-LLM's dependency)
    from transformers import AutoTokenizer  # type: ignore[import-not-found]  # only in the GPU image, as xgrammar

    info = xgrammar.TokenizerInfo.from_huggingface(AutoTokenizer.from_pretrained(str(tokenizer_dir)))
    compiler = xgrammar.GrammarCompiler(info, max_threads=1, cache_enabled=False)

    def compile_guide(kind: str, guide: str | None) -> None:
        if kind == "json_object":
            compiler.compile_builtin_json_grammar()
        elif kind == "json_schema":
            compiler.compile_json_schema(guide)
        elif kind == "regex":
            compiler.compile_regex(guide)
        elif kind == "ebnf":
            compiler.compile_grammar(guide)
        else:
            raise ValueError(f"unknown guide kind {kind!r}")

    return compile_guide


def _outlines(tokenizer_dir: Path) -> Any:
    from tokenizers import Tokenizer

    from inference_platform.inference_image.runtime.byte_level import token_bytes
    from inference_platform.inference_image.testing.cpu_llm_api.guided import GuidedVocabulary, regex_of
    from inference_platform.inference_image.testing.cpu_llm_api.params import GuidedDecodingParams

    tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    eos = config.get("eos_token")
    eos = eos.get("content") if isinstance(eos, dict) else eos
    eos_id = tokenizer.token_to_id(eos) if isinstance(eos, str) else None
    vocabulary = GuidedVocabulary(token_bytes(tokenizer), eos_id if eos_id is not None else -1)

    def compile_guide(kind: str, guide: str | None) -> None:
        params = GuidedDecodingParams(json_object=True) if kind == "json_object" else None
        if params is None:
            if kind not in GUIDE_KEYWORDS:
                raise ValueError(f"unknown guide kind {kind!r}")
            keyword: dict[str, Any] = {GUIDE_KEYWORDS[kind]: guide}
            params = GuidedDecodingParams(**keyword)
        vocabulary.index(regex_of(params))

    return compile_guide


def _cap_memory(extra_mib: int) -> None:
    """Address space: what the process maps now, plus ``extra_mib``."""
    with open("/proc/self/status", encoding="ascii") as status:
        size_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = size_kb * 1024 + extra_mib * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="guide_worker", description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer-dir", type=Path, required=True)
    parser.add_argument("--compiler", choices=("xgrammar", "outlines"), required=True)
    parser.add_argument("--memory-mib", type=int, required=True)
    args = parser.parse_args(argv)
    compile_guide = (_xgrammar if args.compiler == "xgrammar" else _outlines)(args.tokenizer_dir)
    compile_guide("json_object", None)  # warm: the first compile loads what every later one needs
    _cap_memory(args.memory_mib)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            compile_guide(str(request["kind"]), request.get("guide"))
            answer: dict[str, Any] = {"ok": True}
        except MemoryError:
            answer = {"ok": False, "memory": True}
        except Exception as err:  # the compiler's own refusal: the client's guide is wrong
            answer = {"ok": False, "error": f"{type(err).__name__}: {err}"[:500]}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
        if answer.get("memory"):
            return 3  # a MemoryError may have left the interpreter short: the parent starts a new worker
    return 0


if __name__ == "__main__":
    sys.exit(main())
