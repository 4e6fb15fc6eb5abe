"""The expr-lang port (planners/expr_lang.py) against the language's own rules at v1.17.8, the version kedacore/keda
v2.20.2 pins: precedence and associativity (parser/operator/operator.go), nil coalescing and its parse rule
(parser/parser_test.go), nil at run time (vm/runtime), builtins (builtin/lib.go)."""

from __future__ import annotations

import re

import pytest

from inference_platform.planners.expr_lang import EXPR_VERSION, ExprError, compile_formula, evaluate


@pytest.mark.parametrize(
    ("formula", "value"),
    [
        ("1 + 2 * 3 - 4 / 8", 6.5),  # / is float division
        ("10 - 4 - 3", 3),  # left-associative
        ("2 ** 3 ** 2", 512.0),  # right-associative power
        ("-2 ** 2", -4.0),  # unary minus binds looser than **
        ("-a * 2", -6),
        ("7 % 3", 1),
        ("-7 % 3", -1),  # Go's remainder keeps the dividend's sign
        ("true ? 1 : false ? 2 : 3", 1),
        ("false ? 1 : false ? 2 : 3", 3),  # the else branch nests to the right
        ("a >= 2 ? 10 : 20", 10),
        ("1 < 2 == true", True),  # comparisons share one level, left to right
        ("not true || true", True),  # not binds tighter than ||
        ("max(1, 2.5, 2) + min(a, 4)", 5.5),
        ("max(3, 2.5)", 3),  # the winning argument keeps its type
        ("ceil(2.1) + floor(2.9) + abs(-1) + round(2.5) + round(-2.5)", 6.0),  # round: half away from 0
        # Nil coalescing (parser_test.go "foo ?? bar ?? baz" is left-associative; print_test.go "(nil ?? 1) > 0";
        # compiler_test.go "true ?? nil ?? nil ?? nil").
        ("(nil ?? 1) > 0", True),
        ("true ?? nil ?? nil ?? nil", True),
        ("n ?? n ?? 7", 7),
        ("a ?? 1", 3),
        ("false || n ?? true", True),  # parser_test.go "foo || bar ?? baz" is foo || (bar ?? baz)
        ("n == nil", True),
        ("a == nil", False),
        ("nil == nil", True),
        ("float(3)", 3.0),
        # KEDA's castToFloatIfNecessary wrapper around a formula with ??.
        (
            "let _kedaCompositeResult = ((n ?? 2) + 1); _kedaCompositeResult == nil ? nil : float(_kedaCompositeResult)",
            3.0,
        ),
        ("let r = (n); r == nil ? nil : float(r)", None),
        ("let x = 2; let y = x * 3; y + 1", 7),
    ],
)
def test_evaluator_follows_expr_lang(formula, value):
    assert evaluate(formula, {"a": 3, "n": None}) == value


@pytest.mark.parametrize(
    ("formula", "words"),
    [("b + 1", "unknown name 'b'"), ("a in [1]", "outside the evaluated subset"),
     ("upper(a)", "function 'upper'"), ("(a + 1", "expected ')'"), ("a 1", "after the expression"),
     ("7.5 % 2", "needs integers"), ('"x"', "unexpected"), ("a ?: 1", "elvis"),
     # parser_test.go: "Operator (||) and coalesce expressions (??) cannot be mixed. Wrap either by parentheses."
     ("n ?? false || true", "Operator (||) and coalesce expressions (??) cannot be mixed"),
     ("n ?? 0 > 0", "Operator (>) and coalesce expressions (??) cannot be mixed"),
     # Nil at run time: arithmetic, ordering, a conditional, max/min and float() refuse it.
     ("n / 2", "invalid operation: <nil> / int"), ("n > 0", "invalid operation: <nil> > int"),
     ("n ? 1 : 2", "wants a bool"), ("max(n, 1)", "invalid argument for max (type <nil>)"),
     ("float(n)", "float(<nil>)")],
)  # fmt: skip
def test_evaluator_refuses_what_expr_lang_refuses(formula, words):
    with pytest.raises(ExprError, match=re.escape(words)):
        evaluate(formula, {"a": 3, "n": None})


def test_names_are_checked_when_compiled_as_under_expr_env():
    program = compile_formula("requests / 2", frozenset({"requests"}))
    assert program.run({"requests": 8.0}) == 4.0
    with pytest.raises(ExprError, match="unknown name 'kv'"):
        compile_formula("kv / 2", frozenset({"requests"}))
    with pytest.raises(ExprError, match="no value for requests"):
        program.run({})
    assert EXPR_VERSION == "v1.17.8"
