"""A small evaluator of the expr-lang subset KEDA's ``scalingModifiers.formula`` uses, faithful to
expr-lang's parser (github.com/expr-lang/expr, parser/operator/operator.go precedence table; the
conditional is parsed at the lowest level with both branches at the lowest level again, so it nests to
the right) and its runtime (``/`` always gives a float, ``%`` needs integers, ``**`` and ``^`` are
right-associative powers, unary ``-``/``+`` bind at 90 and ``not``/``!`` at 50).

Why here: no Python package evaluates expr-lang (PyPI's ``expr-lang`` 0.1.0 is an empty placeholder;
``enchanter-golem`` 0.1.0 wraps a Go build but returns ``4 / 8`` as 0, which expr-lang does not), and the
tests must evaluate the formula string the ScaledObject ships, not a Python re-statement of it.

Supported: number and boolean literals, variables (an unknown name is an error, as under ``expr.Env``),
parentheses, the operators below and the builtins ``min``, ``max``, ``abs``, ``ceil``, ``floor``,
``round``. Anything else (strings, member access, ``in``, ``matches``, ``??``, ranges, pipes) is refused
loudly, so a formula that leaves the subset fails its test instead of being guessed at.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Number = int | float
# expr-lang's binary operators this evaluator implements: (precedence, right-associative).
BINARY: dict[str, tuple[int, bool]] = {
    "or": (10, False), "||": (10, False),
    "and": (15, False), "&&": (15, False),
    "==": (20, False), "!=": (20, False), "<": (20, False), ">": (20, False), ">=": (20, False), "<=": (20, False),
    "+": (30, False), "-": (30, False),
    "*": (60, False), "/": (60, False), "%": (60, False),
    "**": (100, True), "^": (100, True),
}  # fmt: skip
UNARY = {"not": 50, "!": 50, "-": 90, "+": 90}
REFUSED = {"in", "matches", "contains", "startsWith", "endsWith", "??", "..", "|", "?.", "."}
_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_$][A-Za-z0-9_$]*)"
    r"|(?P<op>\*\*|\?\?|\?\.|==|!=|<=|>=|&&|\|\||\.\.|[-+*/%^<>!?:(),|.\[\]\"'`#{}]))"
)


class ExprError(ValueError):
    """The formula is outside the subset, malformed, or names an unknown variable."""


@dataclass(frozen=True)
class _Token:
    kind: str  # number | name | op | end
    text: str


def _tokens(source: str) -> list[_Token]:
    out, pos = [], 0
    while pos < len(source):
        if source[pos:].strip() == "":
            break
        match = _TOKEN.match(source, pos)
        if not match or match.end() == pos:
            raise ExprError(f"unexpected character at {pos}: {source[pos : pos + 10]!r}")
        kind = match.lastgroup or "op"
        out.append(_Token(kind, match.group(kind)))
        pos = match.end()
    return [*out, _Token("end", "")]


class _Parser:
    def __init__(self, source: str, variables: Mapping[str, Any]) -> None:
        self.tokens, self.at, self.variables = _tokens(source), 0, variables

    @property
    def current(self) -> _Token:
        return self.tokens[self.at]

    def take(self, text: str | None = None) -> _Token:
        token = self.current
        if text is not None and token.text != text:
            raise ExprError(f"expected {text!r}, got {token.text or 'the end'!r}")
        self.at += 1
        return token

    def expression(self, precedence: int = 0) -> Callable[[], Any]:
        left = self.unary()
        while True:
            op = self.current.text if self.current.kind in ("op", "name") else ""
            if op in REFUSED:
                raise ExprError(f"operator {op!r} is outside the evaluated subset")
            if op not in BINARY or BINARY[op][0] < precedence:
                break
            level, right_assoc = BINARY[op]
            self.take()
            right = self.expression(level if right_assoc else level + 1)
            left = _binary(op, left, right)
        if precedence == 0:
            while self.current.text == "?":
                self.take()
                if self.current.text == ":":
                    raise ExprError("the elvis operator ?: is outside the evaluated subset")
                then = self.expression(0)
                self.take(":")
                otherwise = self.expression(0)
                left = _conditional(left, then, otherwise)
        return left

    def unary(self) -> Callable[[], Any]:
        token = self.current
        if token.text in UNARY and token.kind in ("op", "name"):
            self.take()
            operand = self.expression(UNARY[token.text])
            return _unary(token.text, operand)
        return self.primary()

    def primary(self) -> Callable[[], Any]:
        token = self.take()
        if token.kind == "number":
            text = token.text.replace("_", "")
            value: Number = float(text) if any(c in text for c in ".eE") else int(text)
            return lambda: value
        if token.kind == "name":
            if token.text in ("true", "false"):
                flag = token.text == "true"
                return lambda: flag
            if self.current.text == "(":
                return self.call(token.text)
            if token.text not in self.variables:
                raise ExprError(f"unknown name {token.text!r} (known: {', '.join(sorted(self.variables))})")
            name = token.text
            return lambda: self.variables[name]
        if token.text == "(":
            inner = self.expression(0)
            self.take(")")
            return inner
        raise ExprError(f"unexpected {token.text or 'end of formula'!r}")

    def call(self, name: str) -> Callable[[], Any]:
        if name not in BUILTINS:
            raise ExprError(f"function {name!r} is outside the evaluated subset ({', '.join(sorted(BUILTINS))})")
        self.take("(")
        args: list[Callable[[], Any]] = []
        while self.current.text != ")":
            args.append(self.expression(0))
            if self.current.text != ")":
                self.take(",")
        self.take(")")
        function = BUILTINS[name]
        return lambda: function(*[a() for a in args])


def _number(value: Any, op: str) -> Number:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExprError(f"invalid operation: {op} on {type(value).__name__}")
    return value


def _boolean(value: Any, op: str) -> bool:
    if not isinstance(value, bool):
        raise ExprError(f"invalid operation: {op} on {type(value).__name__} (expr-lang wants a bool)")
    return value


def _arith(op: str, a: Any, b: Any) -> Any:
    x, y = _number(a, op), _number(b, op)
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if op == "/":
        return x / y if y else (math.copysign(math.inf, x) if x else math.nan)  # Go float division
    if op == "%":
        if not (isinstance(x, int) and isinstance(y, int)):
            raise ExprError("invalid operation: % needs integers")
        return int(math.fmod(x, y))  # Go's remainder takes the dividend's sign
    return float(x) ** float(y)  # ** and ^: expr-lang's pow is math.Pow on floats


def _compare(op: str, a: Any, b: Any) -> bool:
    if op in ("==", "!="):
        same = a == b and isinstance(a, bool) == isinstance(b, bool)
        return same if op == "==" else not same
    x, y = _number(a, op), _number(b, op)
    return {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[op]


def _binary(op: str, left: Callable[[], Any], right: Callable[[], Any]) -> Callable[[], Any]:
    if op in ("and", "&&"):
        return lambda: _boolean(left(), op) and _boolean(right(), op)
    if op in ("or", "||"):
        return lambda: _boolean(left(), op) or _boolean(right(), op)
    if op in ("==", "!=", "<", ">", "<=", ">="):
        return lambda: _compare(op, left(), right())
    return lambda: _arith(op, left(), right())


def _unary(op: str, operand: Callable[[], Any]) -> Callable[[], Any]:
    if op in ("not", "!"):
        return lambda: not _boolean(operand(), op)
    if op == "-":
        return lambda: -_number(operand(), op)
    return lambda: +_number(operand(), op)


def _conditional(cond: Callable[[], Any], then: Callable[[], Any], otherwise: Callable[[], Any]) -> Callable[[], Any]:
    return lambda: then() if _boolean(cond(), "?:") else otherwise()


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    def function(*values: Any) -> Any:
        if not values:
            raise ExprError("max/min need at least one argument")
        return pick(_number(v, "max/min") for v in values)

    return function


BUILTINS: dict[str, Callable[..., Any]] = {
    "max": _extreme(max),
    "min": _extreme(min),
    "abs": lambda v: abs(_number(v, "abs")),
    "ceil": lambda v: float(math.ceil(_number(v, "ceil"))),
    "floor": lambda v: float(math.floor(_number(v, "floor"))),
    "round": lambda v: math.copysign(math.floor(abs(_number(v, "round")) + 0.5), v),  # Go's math.Round
}


def evaluate(formula: str, variables: Mapping[str, Any]) -> Any:
    """The value of ``formula`` with ``variables`` (KEDA passes each trigger's metric by trigger name)."""
    parser = _Parser(formula, variables)
    program = parser.expression(0)
    if parser.current.kind != "end":
        raise ExprError(f"unexpected {parser.current.text!r} after the expression")
    return program()
