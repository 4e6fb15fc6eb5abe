"""Guided decoding with bounded cost: every guide a request carries is checked here before the engine sees it.

TensorRT-LLM 1.2 compiles a request's grammar inline in its executor loop, with no timeout, and xgrammar 0.1.25
bounds nothing but recursion depth (shared/facts/engine.md section 6; pinned in tests/inference_image/openai_api/
test_guides.py): one pathological schema stalls every request of the replica, and a large length bound grows the
compile until the kernel kills the model process (issue 27 saw 20 GB from 0.2 KB). So, per guide:

1. **Structure** (``check_schema`` / ``check_regex``, pure, linear in the guide's size): bytes, nesting depth,
   properties, enum/const values, string and array length bounds, pattern length, and every ``{m,n}`` repetition
   (their product when nested) against ``serving.guidedDecoding.limits`` (``server_file.GuideLimits``).
2. **Compile** (``GuideChecker``): the guide is compiled by the engine's own compiler (xgrammar, when the image has
   it; the CPU stand-in's outlines-core index locally) in a worker process that runs under an address-space limit
   (``compileMemoryMib`` above its own size) and a deadline (``compileSeconds``). A worker that overruns either is
   killed and replaced; the request gets the 400; the replica serves the next request. Results are cached by the
   guide's hash, so a repeated schema (every instructor call of one model class) costs one compile.

Each refusal is OpenAI's 400 (``invalid_request_error``, code ``guide_limit_exceeded``) naming the request field and
the setting it exceeds.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.inference_image.openai_api.errors import ApiError, invalid
from inference_platform.inference_image.openai_api.server_file import GuideLimits
from inference_platform.processes import with_parent_death

LOG = logging.getLogger("openai_api.guides")
LIMIT_CODE = "guide_limit_exceeded"
SETTING = "serving.guidedDecoding.limits"
CACHE_SIZE = 1024
_STRING_BOUNDS = ("minLength", "maxLength")
_ARRAY_BOUNDS = ("minItems", "maxItems", "minContains", "maxContains")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
               "unevaluatedItems", "unevaluatedProperties")  # fmt: skip
_NESTING = {"properties", "patternProperties", "additionalProperties", "items", "prefixItems", "contains"}
"""Keywords whose subschemas describe nested data: each adds a level of nesting."""


@dataclass(frozen=True)
class Guide:
    """What the engine is asked to follow: ``json_object`` (no schema), ``json_schema``, ``regex`` or ``ebnf``."""

    kind: str
    text: str | None = None


def exceeded(param: str, what: str, limit: str, allowed: float) -> ApiError:
    return invalid(
        f"{param}: {what} exceeds {SETTING}.{limit} ({allowed:g}); this server bounds what a guide may cost",
        param=param,
        code=LIMIT_CODE,
    )


def check_schema(schema: Any, limits: GuideLimits, *, param: str) -> str:
    """The schema serialized for the engine, once every bound holds; else the 400 naming the first it breaks."""
    if not isinstance(schema, dict):
        raise invalid(f"{param}: a JSON schema must be a JSON object", param=param)
    text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    if len(text.encode("utf-8")) > limits.schema_bytes:
        raise exceeded(param, f"a schema of {len(text.encode('utf-8'))} bytes", "schemaBytes", limits.schema_bytes)
    properties = enums = 0
    for node, depth in _walk(schema):
        if depth > limits.depth:
            raise exceeded(param, f"nesting depth {depth}", "depth", limits.depth)
        props = node.get("properties")
        if isinstance(props, dict):
            properties += len(props)
            if properties > limits.properties:
                raise exceeded(param, f"{properties} object properties", "properties", limits.properties)
        values = node.get("enum")
        enums += (len(values) if isinstance(values, list) else 0) + (1 if "const" in node else 0)
        if enums > limits.enum_values:
            raise exceeded(param, f"{enums} enum/const values", "enumValues", limits.enum_values)
        for keyword, limit, name in ((_STRING_BOUNDS, limits.string_length, "stringLength"),
                                     (_ARRAY_BOUNDS, limits.array_items, "arrayItems")):  # fmt: skip
            for key in keyword:
                if key in node:
                    bound = node[key]
                    if isinstance(bound, bool) or not isinstance(bound, int) or bound < 0:
                        raise invalid(f"{param}: {key} must be a non-negative integer, got {bound!r}", param=param)
                    if bound > limit:
                        raise exceeded(param, f"{key} {bound}", name, limit)
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            check_regex(pattern, limits, param=param)
    return text


def check_regex(pattern: str, limits: GuideLimits, *, param: str) -> None:
    """A regex's length and its counted repetitions (nested ones multiply) against the limits."""
    if len(pattern) > limits.pattern_chars:
        raise exceeded(param, f"a pattern of {len(pattern)} characters", "patternChars", limits.pattern_chars)
    worst = _repetition(pattern)
    if worst > limits.string_length:
        raise exceeded(param, f"a repetition of up to {worst} in its pattern", "stringLength", limits.string_length)


def _repetition(pattern: str) -> int:
    """The largest count a ``{m,n}`` repetition allows, nested ones multiplied (``(a{10}){10}`` is 100); 1 when
    there is none. Read from the text, so any dialect's quantifiers are seen (unbounded ``*``/``+`` cost nothing:
    a grammar loops, it does not unroll them)."""
    quantifier = re.compile(r"\{(\d+)(?:,(\d*))?\}")
    stack, last, i = [1], 1, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            last, i = 1, i + 2
        elif ch == "[":
            i = _class_end(pattern, i)
            last = 1
        elif ch == "(":
            stack.append(1)
            last, i = 1, i + 1
        elif ch == ")" and len(stack) > 1:
            last = stack.pop()
            stack[-1] = max(stack[-1], last)
            i += 1
        elif ch == "{" and (match := quantifier.match(pattern, i)):
            last *= max(int(match.group(2) or match.group(1)), 1)
            stack[-1] = max(stack[-1], last)
            i = match.end()
        else:
            last, i = 1, i + 1
    return stack[0]


def _class_end(pattern: str, start: int) -> int:
    """The index after the character class opening at ``start``."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


def _walk(schema: dict[str, Any]) -> Iterator[tuple[dict[str, Any], int]]:
    """Every subschema with the data nesting depth it describes (iterative: no recursion limit to hit)."""
    queue: collections.deque[tuple[Any, int]] = collections.deque([(schema, 0)])
    while queue:
        node, depth = queue.popleft()
        if not isinstance(node, dict):
            continue
        yield node, depth
        for key, value in node.items():
            deeper = depth + 1 if key in _NESTING else depth
            if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
                queue.extend((sub, deeper) for sub in value.values())
            elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
                queue.extend((sub, deeper) for sub in value)
            elif key in _SUBSCHEMAS:
                if isinstance(value, list):
                    queue.extend((sub, deeper) for sub in value)
                else:
                    queue.append((value, deeper))


class GuideChecker:
    """Compiles guides in a worker process, bounded in time and memory, caching each verdict by the guide's hash."""

    def __init__(self, tokenizer_dir: Path, limits: GuideLimits, *, compiler: str | None = None) -> None:
        self.tokenizer_dir = tokenizer_dir
        self.limits = limits
        self.compiler = compiler or available_compiler()
        self._cache: collections.OrderedDict[str, str | None] = collections.OrderedDict()
        self._lock = asyncio.Lock()
        self._worker: _Worker | None = None
        self.compiles = 0
        self.killed = 0

    async def check(self, guide: Guide, *, param: str) -> None:
        """Raise the 400 for a guide that does not compile within the bounds (cached verdicts answer at once)."""
        if self.compiler == "none":
            return
        key = hashlib.sha256(f"{guide.kind}\0{guide.text}".encode()).hexdigest()
        if key in self._cache:
            self._cache.move_to_end(key)
            verdict = self._cache[key]
        else:
            async with self._lock:
                verdict = await asyncio.get_running_loop().run_in_executor(None, self._compile, guide)
            self._cache[key] = verdict
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        if verdict is None:
            return
        if verdict.startswith("limit:"):
            limit, _, what = verdict[len("limit:") :].partition(":")
            allowed = getattr(self.limits, _SNAKE[limit])
            raise exceeded(param, what, limit, allowed)
        raise invalid(f"{param}: the guide does not compile: {verdict}", param=param)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def start(self) -> None:
        """Start the worker ahead of the first guide (it loads the tokenizer and the compiler)."""
        if self.compiler != "none" and self._worker is None:
            self._worker = _Worker(self.tokenizer_dir, self.compiler, self.limits.compile_memory_mib)

    def _compile(self, guide: Guide) -> str | None:
        """In a thread: None when it compiled; else ``limit:<setting>:<what>`` or the compiler's error."""
        self.start()
        assert self._worker is not None
        self.compiles += 1
        answer = self._worker.ask({"kind": guide.kind, "guide": guide.text}, self.limits.compile_seconds)
        if answer is None or answer.get("memory"):
            self.killed += 1
            self._worker.stop()
            self._worker = None
            if answer is None:
                return f"limit:compileSeconds:a compile longer than {self.limits.compile_seconds:g} s"
            return f"limit:compileMemoryMib:a compile needing more than {self.limits.compile_memory_mib} MiB"
        return None if answer.get("ok") else str(answer.get("error", "unknown error"))


_SNAKE = {"compileSeconds": "compile_seconds", "compileMemoryMib": "compile_memory_mib"}


def available_compiler() -> str:
    """``xgrammar`` (TensorRT-LLM's default backend, in the GPU image), else the CPU stand-in's ``outlines``
    index (the local stack), else ``none`` (structure checks only)."""
    for module, name in (("xgrammar", "xgrammar"), ("outlines_core", "outlines")):
        with contextlib.suppress(ImportError):
            __import__(module)
            return name
    return "none"


class _Worker:
    """``python -m ...guide_worker``: one JSON line in, one out; its own session, so a kill takes all of it."""

    def __init__(self, tokenizer_dir: Path, compiler: str, memory_mib: int) -> None:
        argv = [sys.executable, "-m", "inference_platform.inference_image.openai_api.guide_worker",
                "--tokenizer-dir", str(tokenizer_dir), "--compiler", compiler, "--memory-mib", str(memory_mib)]  # fmt: skip
        # It dies with this server (no preexec_fn: a parent with gRPC threads must not fork one, processes.py).
        self.process = subprocess.Popen(
            with_parent_death(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            start_new_session=True, env=os.environ | {"PYTHONUNBUFFERED": "1"},
        )  # fmt: skip

    def ask(self, request: dict[str, Any], deadline: float) -> dict[str, Any] | None:
        """The worker's answer; None when it gave none within ``deadline`` seconds; ``memory`` when it died."""
        assert self.process.stdin is not None and self.process.stdout is not None
        answer: list[str] = []
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except OSError:
            return None
        stdout = self.process.stdout
        reader = threading.Thread(target=lambda: answer.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(deadline)
        if not answer:
            return None  # still compiling at the deadline
        if not answer[0]:
            return {"ok": False, "memory": True}  # the worker died: an allocation beyond its cap aborts it
        try:
            parsed: dict[str, Any] = json.loads(answer[0])
        except ValueError:
            return None
        return parsed

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
