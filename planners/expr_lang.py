"""The expr-lang subset KEDA's ``scalingModifiers.formula`` uses, evaluated in Python with expr-lang's own semantics.

KEDA v2.20.2 pins github.com/expr-lang/expr v1.17.8 (kedacore/keda go.mod) and runs the formula through it
(pkg/scaling/modifiers/formula.go ``expr.Run``). Everything here follows expr-lang at that tag:

- **Parser** (parser/parser.go, parser/operator/operator.go): the binary precedence table below; ``??`` binds at
  500, left-associative, and after a ``??`` another binary operator at the same level is a syntax error ("Operator
  (X) and coalesce expressions (??) cannot be mixed. Wrap either by parentheses."); comparisons, ``==``/``!=`` at
  20; the conditional ``c ? a : b`` is parsed at the lowest level with both branches at the lowest level again, so it
  nests to the right; ``let name = value; rest`` and ``;`` sequences (the value of the last) at the top level and
  inside parentheses; unary ``-``/``+`` bind at 90 and ``not``/``!`` at 50.
- **Runtime** (vm/vm.go, vm/runtime/helpers[generated].go, builtin/lib.go): ``/`` always gives a float; ``%`` needs
  integers and keeps the dividend's sign; ``**``/``^`` are ``math.Pow``; arithmetic or an ordering comparison with
  ``nil`` is an error ("invalid operation"); ``==`` is true for two ``nil``\\ s and false for ``nil`` and a number;
  ``a ?? b`` is ``a`` unless ``a`` is nil (``OpJumpIfNotNil``); a conditional or ``&&``/``||`` on a non-bool is an
  error (the VM's bool assertion); ``max``/``min`` return the winning argument with its type and refuse ``nil``;
  ``float(nil)`` is an error; ``round`` is Go's half away from zero.
- **Compile-time names**: KEDA compiles with ``expr.Env`` of the trigger names (apis/keda/v1alpha1/
  scaledobject_webhook.go ``validateScalingModifiersFormula``), so an unknown name is an error before any run.

Why a port and not the library: no Python package evaluates expr-lang (PyPI's ``expr-lang`` 0.1.0 is an empty
placeholder; ``enchanter-golem`` 0.1.0 wraps a Go build but returns ``4 / 8`` as 0, which expr-lang does not), the
project ships no Go toolchain, and the costing (``planners/node_hours.py``) must read the rendered formula on any
machine. Anything outside the subset (strings, member access, ``in``, ``matches``, ranges, pipes, the elvis ``?:``)
is refused loudly, so a formula that leaves it fails instead of being guessed at. ``tests/planners/test_expr_lang.py``
holds this to cases from expr-lang's own tests at v1.17.8.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

EXPR_VERSION = "v1.17.8"
"""github.com/expr-lang/expr as kedacore/keda v2.20.2's go.mod pins it."""
Number = int | float
# expr-lang's binary operators this evaluator implements: (precedence, right-associative).
BINARY: dict[str, tuple[int, bool]] = {
    "or": (10, False), "||": (10, False),
    "and": (15, False), "&&": (15, False),
    "==": (20, False), "!=": (20, False), "<": (20, False), ">": (20, False), ">=": (20, False), "<=": (20, False),
    "+": (30, False), "-": (30, False),
    "*": (60, False), "/": (60, False), "%": (60, False),
    "**": (100, True), "^": (100, True),
    "??": (500, False),
}  # fmt: skip
UNARY = {"not": 50, "!": 50, "-": 90, "+": 90}
REFUSED = {"in", "matches", "contains", "startsWith", "endsWith", "..", "|", "?.", "."}
_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_$][A-Za-z0-9_$]*)"
    r"|(?P<op>\*\*|\?\?|\?\.|==|!=|<=|>=|&&|\|\||\.\.|[-+*/%^<>!?:(),|.;=\[\]\"'`#{}]))"
)


class ExprError(ValueError):
    """The formula is outside the subset, malformed, names an unknown variable, or fails at run time."""


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


Scope = dict[str, Any]
Thunk = Callable[[Scope], Any]


class _Parser:
    def __init__(self, source: str, names: frozenset[str]) -> None:
        self.tokens, self.at, self.names = _tokens(source), 0, set(names)

    @property
    def current(self) -> _Token:
        return self.tokens[self.at]

    def take(self, text: str | None = None) -> _Token:
        token = self.current
        if text is not None and token.text != text:
            raise ExprError(f"expected {text!r}, got {token.text or 'the end'!r}")
        self.at += 1
        return token

    def sequence(self) -> Thunk:
        """``e1; e2; ...`` (parser.go parseSequenceExpression): the value of the last."""
        parts = [self.expression(0)]
        while self.current.text == ";":
            self.take()
            if self.current.kind == "end" or self.current.text == ")":
                break
            parts.append(self.expression(0))
        if len(parts) == 1:
            return parts[0]

        def run(scope: Scope) -> Any:
            value = None
            for part in parts:
                value = part(scope)
            return value

        return run

    def expression(self, precedence: int = 0) -> Thunk:
        if precedence == 0 and self.current.text == "let" and self.current.kind == "name":
            return self.declaration()
        left = self.unary()
        previous = ""
        while True:
            op = self.current.text if self.current.kind in ("op", "name") else ""
            if op in REFUSED:
                raise ExprError(f"operator {op!r} is outside the evaluated subset")
            if op not in BINARY or BINARY[op][0] < precedence:
                break
            if previous == "??" and op != "??":
                raise ExprError(f"Operator ({op}) and coalesce expressions (??) cannot be mixed. Wrap either by "
                                "parentheses.")  # fmt: skip
            level, right_assoc = BINARY[op]
            self.take()
            right = self.expression(level if right_assoc else level + 1)
            left = _binary(op, left, right)
            previous = op
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

    def declaration(self) -> Thunk:
        """``let name = value; rest`` (parser.go parseVariableDeclaration)."""
        self.take("let")
        token = self.take()
        if token.kind != "name":
            raise ExprError(f"expected a variable name after let, got {token.text!r}")
        self.take("=")
        value = self.expression(0)
        self.take(";")
        name = token.text
        self.names.add(name)
        rest = self.sequence()

        def run(scope: Scope) -> Any:
            return rest({**scope, name: value(scope)})

        return run

    def unary(self) -> Thunk:
        token = self.current
        if token.text in UNARY and token.kind in ("op", "name"):
            self.take()
            operand = self.expression(UNARY[token.text])
            return _unary(token.text, operand)
        return self.primary()

    def primary(self) -> Thunk:
        token = self.take()
        if token.kind == "number":
            text = token.text.replace("_", "")
            value: Number = float(text) if any(c in text for c in ".eE") else int(text)
            return lambda _: value
        if token.kind == "name":
            if token.text in ("true", "false"):
                flag = token.text == "true"
                return lambda _: flag
            if token.text == "nil":
                return lambda _: None
            if self.current.text == "(":
                return self.call(token.text)
            if token.text not in self.names:
                raise ExprError(f"unknown name {token.text!r} (known: {', '.join(sorted(self.names))})")
            name = token.text
            return lambda scope: scope[name]
        if token.text == "(":
            inner = self.sequence()
            self.take(")")
            return inner
        raise ExprError(f"unexpected {token.text or 'end of formula'!r}")

    def call(self, name: str) -> Thunk:
        if name not in BUILTINS:
            raise ExprError(f"function {name!r} is outside the evaluated subset ({', '.join(sorted(BUILTINS))})")
        self.take("(")
        args: list[Thunk] = []
        while self.current.text != ")":
            args.append(self.expression(0))
            if self.current.text != ")":
                self.take(",")
        self.take(")")
        function = BUILTINS[name]
        return lambda scope: function(*[a(scope) for a in args])


def _type(value: Any) -> str:
    """Go's %T of a value as expr-lang would hold it."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    return "int" if isinstance(value, int) else "float64"


def _number(value: Any, op: str) -> Number:
    if isinstance(value, int | float) and not isinstance(value, bool):
        number: Number = value
        return number
    raise ExprError(f"invalid operation: {_type(value)} {op}")


def _boolean(value: Any, op: str) -> bool:
    if isinstance(value, bool):
        flag: bool = value
        return flag
    raise ExprError(f"invalid operation: {op} on {_type(value)} (expr-lang wants a bool)")


def _arith(op: str, a: Any, b: Any) -> Any:
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b)):
        raise ExprError(f"invalid operation: {_type(a)} {op} {_type(b)}")
    x, y = a, b
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
        same = bool(a == b) and isinstance(a, bool) == isinstance(b, bool) and (a is None) == (b is None)
        return same if op == "==" else not same
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b)):
        raise ExprError(f"invalid operation: {_type(a)} {op} {_type(b)}")
    x, y = _number(a, op), _number(b, op)
    return {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[op]


def _binary(op: str, left: Thunk, right: Thunk) -> Thunk:
    if op in ("and", "&&"):
        return lambda s: _boolean(left(s), op) and _boolean(right(s), op)
    if op in ("or", "||"):
        return lambda s: _boolean(left(s), op) or _boolean(right(s), op)
    if op == "??":

        def coalesce(s: Scope) -> Any:
            value = left(s)
            return right(s) if value is None else value

        return coalesce
    if op in ("==", "!=", "<", ">", "<=", ">="):
        return lambda s: _compare(op, left(s), right(s))
    return lambda s: _arith(op, left(s), right(s))


def _unary(op: str, operand: Thunk) -> Thunk:
    if op in ("not", "!"):
        return lambda s: not _boolean(operand(s), op)
    if op == "-":
        return lambda s: -_number(operand(s), op)
    return lambda s: +_number(operand(s), op)


def _conditional(cond: Thunk, then: Thunk, otherwise: Thunk) -> Thunk:
    return lambda s: then(s) if _boolean(cond(s), "?:") else otherwise(s)


def _extreme(name: str, pick: Callable[..., Any]) -> Callable[..., Any]:
    def function(*values: Any) -> Any:
        if not values:
            raise ExprError(f"{name} needs at least one argument")
        for value in values:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ExprError(f"invalid argument for {name} (type {_type(value)})")
        return pick(values)

    return function


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExprError(f"invalid operation: float({_type(value)})")
    return float(value)


BUILTINS: dict[str, Callable[..., Any]] = {
    "max": _extreme("max", max),
    "min": _extreme("min", min),
    "abs": lambda v: abs(_number(v, "abs")),
    "ceil": lambda v: float(math.ceil(_number(v, "ceil"))),
    "floor": lambda v: float(math.floor(_number(v, "floor"))),
    "round": lambda v: math.copysign(math.floor(abs(_number(v, "round")) + 0.5), v),  # Go's math.Round
    "float": _float,
}


@dataclass(frozen=True)
class Program:
    """A compiled formula: names checked against the environment, runnable with any values (``None`` is nil)."""

    source: str
    names: frozenset[str]
    _run: Thunk

    def run(self, variables: Mapping[str, Any]) -> Any:
        missing = self.names - set(variables)
        if missing:
            raise ExprError(f"no value for {', '.join(sorted(missing))}")
        return self._run(dict(variables))


def compile_formula(formula: str, names: frozenset[str] | set[str]) -> Program:
    """``expr.Compile(formula, expr.Env(names))``: a parse error or an unknown name raises ExprError."""
    env = frozenset(names)
    parser = _Parser(formula, env)
    program = parser.sequence()
    if parser.current.kind != "end":
        raise ExprError(f"unexpected {parser.current.text!r} after the expression")
    return Program(formula, env, program)


def evaluate(formula: str, variables: Mapping[str, Any]) -> Any:
    """The value of ``formula`` with ``variables`` (KEDA passes each trigger's metric by trigger name)."""
    return compile_formula(formula, frozenset(variables)).run(variables)
