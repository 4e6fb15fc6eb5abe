"""What the pinned Pulumi SDK's component provider does with Args, where the facades depend on it.

Read from pulumi 3.272.0 (pulumi/provider/experimental/component.py ``ComponentProvider.map_input_properties``
and analyzer.py): each check fails when a release changes the behaviour, so the facade can follow.
"""

# No ``from __future__ import annotations``: the analyzer under test reads these annotations at run time.

from enum import Enum
from typing import NotRequired, TypedDict

import pulumi
import pytest
from pulumi.errors import InputPropertyError
from pulumi.provider.experimental.component import ComponentProvider


class Colour(Enum):
    """A colour."""

    RED = "red"
    """Red."""


class Pot(TypedDict):
    """A pot."""

    colour: NotRequired[Colour]
    """One colour."""
    colours: NotRequired[list[Colour]]
    """Several colours."""


class PotArgs(TypedDict):
    """Args."""

    pot: Pot
    """A nested type."""
    size: int
    """An integer."""


class Painter(pulumi.ComponentResource):
    """A component."""

    def __init__(self, name: str, args: PotArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("test:index:Painter", name, {}, opts)


@pytest.fixture(scope="module")
def provider() -> ComponentProvider:
    return ComponentProvider([Painter], "test", None, "0.0.1")


def _mapped(provider: ComponentProvider, inputs: dict) -> dict:
    return dict(provider.map_inputs(inputs, provider._component_defs["Painter"]))


def test_an_enum_key_arrives_as_the_python_enum(provider):
    assert _mapped(provider, {"pot": {"colour": "red"}, "size": 1.0})["pot"]["colour"] is Colour.RED


def test_a_list_of_enums_arrives_as_empty_objects(provider):
    """Why NodePoolSpec.capacityTypes is a list of strings the facade checks itself, not a list of enums."""
    assert _mapped(provider, {"pot": {"colours": ["red"]}, "size": 1.0})["pot"]["colours"] == [{}]


def test_integers_arrive_as_int_and_missing_required_keys_are_refused(provider):
    assert _mapped(provider, {"pot": {}, "size": 3.0})["size"] == 3
    with pytest.raises(InputPropertyError, match="Missing required input 'size' on 'Painter'"):
        _mapped(provider, {"pot": {}})


def test_annotations_must_be_real_types_not_strings():
    """Why the facade modules do not postpone annotations (``from __future__ import annotations``)."""

    class Postponed(pulumi.ComponentResource):
        def __init__(self, name: str, args: "PotArgs", opts: pulumi.ResourceOptions | None = None) -> None:
            super().__init__("test:index:Postponed", name, {}, opts)

    with pytest.raises(Exception):  # noqa: B017 (the SDK raises a bare AttributeError on a str annotation)
        ComponentProvider([Postponed], "test", None, "0.0.1")
