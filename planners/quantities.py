"""Kubernetes resource quantities (``"500m"``, ``"200Gi"``, ``"1e3"``) read as numbers, with the grammar of
apimachinery's ``pkg/api/resource/quantity.go`` and the suffixes of its ``suffix.go`` (v0.33.13).

Our own reader, so that the planners (and so the core install) do not need the Kubernetes API client:
its ``kubernetes.utils.parse_quantity`` is the only piece the plan used, and the client with its
dependencies is about 80 MB. tests/planners/test_quantities.py checks this reader against that one.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Final

# <signedNumber> ::= [+-] (<digits> | <digits>.<digits> | <digits>. | .<digits>)
_NUMBER: Final = r"[+-]?(?:\d+\.?\d*|\.\d+)"
_QUANTITY: Final = re.compile(rf"(?P<number>{_NUMBER})(?P<suffix>[KMGTPE]i|[eE]{_NUMBER}|[numkMGTPE]?)")

BINARY_SI: Final[dict[str, int]] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
"""Suffix -> power of 2 (suffix.go ``binSuffixes``)."""
DECIMAL_SI: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
"""Suffix -> power of 10 (suffix.go ``decSuffixes``)."""


def parse_quantity(text: str) -> Decimal:
    """The value of a quantity string; ValueError naming what is wrong when it is not one."""
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(
            f"{text!r} is not a quantity: a number with an optional suffix Ki|Mi|Gi|Ti|Pi|Ei, n|u|m|k|M|G|T|P|E "
            "or e<exponent>"
        )
    number, suffix = Decimal(match["number"]), match["suffix"]
    if suffix in BINARY_SI:
        return number * (Decimal(2) ** BINARY_SI[suffix])
    if suffix in DECIMAL_SI:
        return number.scaleb(DECIMAL_SI[suffix])
    exponent = Decimal(suffix[1:])
    if exponent != exponent.to_integral_value():
        raise ValueError(f"{text!r} is not a quantity: the exponent {suffix[1:]} is not a whole number")
    return number.scaleb(int(exponent))
