"""The series a PromQL expression reads, with the label matchers it puts on each (for the class check in
test_live_series.py): function names, keywords, label lists of ``by``/``on``/..., durations, numbers, strings and
Grafana variables are not series; recording-rule names (``level:metric:op``) are reported separately, since the rules
themselves define them."""

from __future__ import annotations

import re
from dataclasses import dataclass

FUNCTIONS = {
    "abs", "absent", "absent_over_time", "avg", "avg_over_time", "bottomk", "ceil", "changes", "clamp", "clamp_max",
    "clamp_min", "count", "count_over_time", "count_values", "delta", "deriv", "exp", "floor", "group",
    "histogram_quantile", "idelta", "increase", "irate", "label_join", "label_replace", "last_over_time", "ln", "log2",
    "log10", "max", "max_over_time", "min", "min_over_time", "predict_linear", "quantile", "quantile_over_time",
    "rate", "resets", "round", "scalar", "sgn", "sort", "sort_desc", "sqrt", "stddev", "stdvar", "sum",
    "sum_over_time", "time", "timestamp", "topk", "vector",
}  # fmt: skip
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless"}
_LABEL_LIST = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_SELECTOR = re.compile(r"\{([^{}]*)\}")
_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
_NAME = re.compile(r"(?<![\w:$.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^{}]*\})?")
_SUFFIXES = ("_bucket", "_sum", "_count")
_BARE = re.compile(r"(?<![\w:])\{([^{}]*__name__[^{}]*)\}")


@dataclass(frozen=True)
class Read:
    name: str
    matchers: tuple[tuple[str, str, str], ...]
    """(label, operator, value) as written."""

    @property
    def family(self) -> str:
        """The name a histogram's parts share (``x_bucket`` -> ``x``)."""
        for suffix in _SUFFIXES:
            if self.name.endswith(suffix):
                return self.name[: -len(suffix)]
        return self.name


def reads(expr: str) -> list[Read]:
    """Every series ``expr`` reads (recording rules included), in order."""
    out = []
    for match in _BARE.finditer(expr):  # {__name__=~"a|b", ...}: a selector that names its series in a matcher
        matchers = tuple(_MATCHER.findall(match.group(1)))
        names = [v for label, op, v in matchers if label == "__name__"]
        rest = tuple(m for m in matchers if m[0] != "__name__")
        out += [Read(name, rest) for value in names for name in value.split("|")]
    expr = _BARE.sub(" x ", expr)
    text = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: m.group(0) if _inside_braces(expr, m.start()) else '""', expr)
    text = _LABEL_LIST.sub(" ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range and subquery windows
    text = re.sub(r"\$\{?\w+\}?", "x", text)  # Grafana variables outside selectors
    for match in _NAME.finditer(text):
        name, selector = match.group(1), match.group(2) or ""
        follows = text[match.end() :].lstrip()[:1]
        if (
            name in FUNCTIONS
            or name in KEYWORDS
            or name in ("e", "x", "inf", "nan")
            or (follows == "(" and not selector)
        ):
            continue
        if name.replace("_", "").isdigit():
            continue
        matchers = tuple(_MATCHER.findall(selector))
        out.append(Read(name, matchers))
    return out


def is_recording_rule(name: str) -> bool:
    return name.count(":") >= 2


def _inside_braces(text: str, at: int) -> bool:
    return text.rfind("{", 0, at) > text.rfind("}", 0, at)
