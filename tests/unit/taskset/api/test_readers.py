"""The defensive readers: what a malformed field reads as, and the two counts that must not be confused,
a decimal string in an annotation and a non-negative integer in stored JSON."""

from __future__ import annotations

import pytest

from taskset.api.readers import as_count, as_items, as_text, decimal_annotation, main_container

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("value", "expected"), [("7", 7), ("007", 7), ("", None), ("-1", None), ("²", None), (7, None)]
)
def test_a_decimal_annotation_is_a_string_of_ascii_digits(value: object, expected: int | None) -> None:
    assert decimal_annotation(value) == expected


@pytest.mark.parametrize(("value", "expected"), [(7, 7), (0, 0), (-1, 0), (True, 0), ("7", 0), (None, 0)])
def test_a_count_in_stored_json_is_a_non_negative_integer(value: object, expected: int) -> None:
    assert as_count(value) == expected


def test_a_field_of_the_wrong_type_reads_as_absent() -> None:
    assert (as_text(3), as_text("a"), as_text(None, "x")) == ("", "a", "x")
    assert (as_items({"a": 1}), as_items([1])) == ([], [1])


def test_the_main_container_is_the_first_declared_with_its_status() -> None:
    pod = {
        "spec": {"containers": [{"name": "main"}, {"name": "side"}]},
        "status": {"containerStatuses": [{"name": "side"}, {"name": "main", "ready": True}]},
    }
    assert main_container(pod) == ("main", {"name": "main", "ready": True})
    assert main_container({"spec": {"containers": "not a list"}}) == ("", {})
