"""The planners' own quantity reader agrees with the Kubernetes client's, which the plan used before (the
client stays out of the core install) and with apimachinery's grammar where the client is looser."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.utils.quantity import parse_quantity as client_parse_quantity

from inference_platform.planners.costing_inputs import QuantityError, gib, number
from inference_platform.planners.quantities import BINARY_SI, DECIMAL_SI, parse_quantity

SUFFIXES = [*BINARY_SI, *DECIMAL_SI, "e3", "E-2", "e+1"]


@pytest.mark.parametrize(
    ("text", "value"),
    [("4", 4), ("500m", Decimal("0.5")), ("1k", 1000), ("200Gi", 200 * 2**30), ("1.5Mi", Decimal("1.5") * 2**20),
     (".5", Decimal("0.5")), ("5.", 5), ("-2k", -2000), ("+3", 3), ("1e3", 1000), ("2E-3", Decimal("0.002")),
     ("1E", 10**18), ("7n", Decimal("7e-9")), ("250u", Decimal("0.00025"))],
)  # fmt: skip
def test_reads_every_form_of_the_grammar(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text", ["", "Gi", "1ki", "1Ki ", " 1", "1.2.3", "1e", "1e1.5", "NaN", "Infinity", "1KB", "0x10"]
)
def test_refuses_what_apimachinery_refuses(text):
    with pytest.raises(ValueError, match="is not a quantity"):
        parse_quantity(text)


@given(
    st.decimals(min_value=-(10**6), max_value=10**6, places=3, allow_nan=False, allow_infinity=False),
    st.sampled_from(SUFFIXES),
)
def test_agrees_with_the_kubernetes_client(value, suffix):
    text = f"{value}{suffix}"
    assert parse_quantity(text) == client_parse_quantity(text)


def test_the_costing_inputs_read_quantities_with_it():
    assert number("500m", "cpu") == 0.5
    assert gib("200Gi", "volumeSize") == 200.0
    with pytest.raises(QuantityError, match="volumeSize: cannot read '12 GB' as a Kubernetes quantity"):
        gib("12 GB", "volumeSize")
