"""Finds assertions on measured durations in test code (test_no_timed_assertions.py runs it over tests/).

A test that asserts "this took less than N seconds" passes on an idle laptop and fails on the shared 2-core
CI machine: it measures the machine, not the code. Speed belongs to ``make bench`` (medians and ratios over
repetitions); tests assert behaviour (what happened, in which order, how many times).

A timed assertion here is an ``assert`` with an ordering comparison (``<``, ``<=``, ``>``, ``>=``, or ``==``
to ``pytest.approx``) of a measured duration. A value is a measured duration when it is

- a difference with a clock reading (``time.monotonic()``, ``time.perf_counter()``, ``time.time()``, their
  ``_ns`` forms, ``loop.time()``, or a name bound to one), e.g. ``time.monotonic() - started``;
- a name bound to one, collected into one (``found.append(ttft)``), or a function returning one, followed
  through the module until nothing new turns up (names are matched module-wide, which errs on the side of
  finding);
- a name that says it holds one (``elapsed``, ``took``, ``wall_s``, a local ``duration``...).

A deadline check (``time.monotonic() < deadline``) is no measurement: it bounds a wait so that a hung test
fails instead of hanging, whatever the machine's speed within the bound. ``len()`` of a list of durations is a
count, not a duration.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns"}
ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
MEASURED = re.compile(r"^(elapsed|took|wall)(_(s|ms|seconds))?$")
"""Names (variables or attributes) of a measured duration."""
MEASURED_LOCAL = re.compile(r"^duration(_(s|ms|seconds))?$")
"""Local variables only: ``config.duration_s`` is a setting, a local ``duration`` a measurement."""
COLLECTING = {"append", "extend", "add", "insert", "appendleft"}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class TimedAssertion:
    line: int
    function: str
    source: str


def _is_clock_call(node: ast.AST) -> bool:
    """``time.monotonic()``, ``perf_counter()``, ``loop.time()``: a call of a clock, with no arguments."""
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name in CLOCKS


def _walk_values(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` through what can carry a duration: not into ``len(...)`` (the length of a list of durations
    is a count) nor into comparisons (``i not in closed`` is a bool, even where ``closed`` holds durations)."""
    stack = [node]
    while stack:
        sub = stack.pop()
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "len":
            continue
        if isinstance(sub, ast.Compare) and sub is not node:
            continue
        yield sub
        stack.extend(ast.iter_child_nodes(sub))


def _names(target: ast.AST) -> list[str]:
    """Names a binding target binds: ``a``, ``a, b``, and the container of ``a[i]`` (not ``i``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _names(element)]
    if isinstance(target, ast.Starred | ast.Subscript):
        return _names(target.value)
    return []


class _Scope:
    """The clock readings and measured durations of one top-level function (its nested functions share them:
    closures), or of the module's own statements; functions returning a duration are known module-wide."""

    def __init__(self, root: ast.AST, returning: set[str]) -> None:
        self.root = root
        self.returning = returning
        self.readings: set[str] = set()
        self.durations: set[str] = set()

    def reads_clock(self, node: ast.AST) -> bool:
        return any(_is_clock_call(n) or (isinstance(n, ast.Name) and n.id in self.readings) for n in ast.walk(node))

    def is_duration(self, node: ast.AST) -> bool:
        for sub in _walk_values(node):
            if isinstance(sub, ast.Name) and (
                sub.id in self.durations or MEASURED.match(sub.id) or MEASURED_LOCAL.match(sub.id)
            ):
                return True
            if isinstance(sub, ast.Attribute) and MEASURED.match(sub.attr):
                return True
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in self.returning:
                return True
            if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub) and self.reads_clock(sub):
                return True
        return False

    def nodes(self) -> Iterator[ast.AST]:
        """The scope's nodes: a function with its nested ones; the module without its top-level functions."""
        if not isinstance(self.root, ast.Module):
            yield from ast.walk(self.root)
            return
        stack: list[ast.AST] = [n for n in self.root.body if not isinstance(n, (*FUNCTIONS, ast.ClassDef))]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(ast.iter_child_nodes(node))

    def sweep(self) -> bool:
        """One pass binding names; whether anything new was found."""
        before = len(self.readings) + len(self.durations) + len(self.returning)
        for node in self.nodes():
            if isinstance(node, FUNCTIONS):
                returns = [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
                if any(self.is_duration(value) for value in returns):
                    self.returning.add(node.name)
            elif isinstance(node, ast.Assign):
                self._bind(node.targets, node.value)
            elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value is not None:
                self._bind([node.target], node.value)
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                self._bind([node.target], node.iter)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in COLLECTING:
                # found.append(ttft) collects durations; arrivals.append(time.monotonic()) readings.
                if any(self.is_duration(arg) for arg in node.args):
                    self.durations.update(_names(node.func.value))
                elif any(self.reads_clock(arg) for arg in node.args):
                    self.readings.update(_names(node.func.value))
        return len(self.readings) + len(self.durations) + len(self.returning) > before

    def _bind(self, targets: list[ast.expr], value: ast.AST) -> None:
        names = [name for target in targets for name in _names(target)]
        if self.is_duration(value):
            self.durations.update(names)
        elif self.reads_clock(value):
            self.readings.update(names)


def _timed(compare: ast.Compare, scope: _Scope) -> bool:
    operands = [compare.left, *compare.comparators]
    if not any(scope.is_duration(o) for o in operands):
        return False
    if any(isinstance(op, ORDERING) for op in compare.ops):
        return True
    return any(
        isinstance(o, ast.Call) and isinstance(o.func, ast.Attribute) and o.func.attr == "approx" for o in operands
    )


def timed_assertions(source: str, filename: str = "<test>") -> Iterator[TimedAssertion]:
    tree = ast.parse(source, filename)
    returning: set[str] = set()
    functions = [f for f in ast.walk(tree) if isinstance(f, FUNCTIONS)]
    nested = {id(n) for f in functions for n in ast.walk(f) if n is not f and isinstance(n, FUNCTIONS)}
    # Top-level functions and methods; a nested function shares its outer function's scope (a closure).
    tops = [f for f in functions if id(f) not in nested]
    scopes = [_Scope(tree, returning), *(_Scope(f, returning) for f in tops)]
    # Until nothing new: a function found to return a duration may make a caller's name one.
    while any([scope.sweep() for scope in scopes]):
        pass
    for scope in scopes:
        for node in scope.nodes():
            if isinstance(node, ast.Assert) and any(
                isinstance(c, ast.Compare) and _timed(c, scope) for c in ast.walk(node.test)
            ):
                owner = max(
                    (f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or f.lineno)),
                    key=lambda f: f.lineno,
                    default=None,
                )
                text = ast.get_source_segment(source, node) or ""
                yield TimedAssertion(node.lineno, owner.name if owner else "<module>", text)
