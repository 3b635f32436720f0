"""The hostile corpus (``tests/corpus/hostile.py``) through the controller's own parse, with the built-in
integrations' checks as the controller runs them: where the controller decides, its verdict names the
field without an API server.

* What the controller fails itself (``Fails`` with ``pod_creation=False``) fails here with the same
  message the TaskSet's status carries.
* What only the API server's Pod validation refuses, and what succeeds, the parse accepts: the
  controller goes on to create the Pods.
* What the API server's schema refuses never reaches the controller; the parse is its second line all
  the same, refusing with a named field, except for the ``schema_only`` cases, which it accepts.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from taskset.api.spec import ParsedTaskSet, ParseResult, ValidationFailure, parse_taskset
from taskset.integrations import BUILT_IN_FRAMEWORK
from tests.corpus.hostile import CORPUS, Fails, Rejected, Succeeds

pytestmark = pytest.mark.unit

CHECKS = BUILT_IN_FRAMEWORK.spec_checks()
GENERATED_SUFFIX = "x7k2q"  # the API server appends five random characters to a generateName


def cases(kind: type, **fields: Any) -> list[Any]:
    chosen = [
        case
        for case in CORPUS
        if isinstance(case.values[1], kind)
        and all(getattr(case.values[1], key) == value for key, value in fields.items())
    ]
    assert chosen, (kind, fields)
    return chosen


def as_stored(obj: Any) -> Any:
    """The object as the API server stores it and the controller reads it: a generated name filled in."""
    stored = copy.deepcopy(obj)
    metadata = stored.get("metadata") if isinstance(stored, dict) else None
    if isinstance(metadata, dict) and "name" not in metadata and "generateName" in metadata:
        metadata["name"] = metadata["generateName"] + GENERATED_SUFFIX
    return stored


def parse(obj: Any) -> ParseResult:
    return parse_taskset(as_stored(obj), CHECKS)


@pytest.mark.parametrize(("obj", "expected"), cases(Fails, pod_creation=False))
def test_what_the_controller_fails_itself_names_the_field(obj: Any, expected: Fails) -> None:
    result = parse(obj)
    assert isinstance(result, ValidationFailure), result
    assert all(text in result.message for text in expected.texts), (result.message, expected.texts)
    assert result.message.startswith(f"{result.field}: ")


@pytest.mark.parametrize(("obj", "expected"), [*cases(Fails, pod_creation=True), *cases(Succeeds)])
def test_what_the_schema_accepts_and_the_controller_does_not_fail_parses(
    obj: Any, expected: Fails | Succeeds
) -> None:
    assert isinstance(parse(obj), ParsedTaskSet), expected


@pytest.mark.parametrize(("obj", "expected"), cases(Rejected, schema_only=False))
def test_the_controller_refuses_what_the_schema_refuses_naming_a_field(obj: Any, expected: Rejected) -> None:
    result = parse(obj)
    assert isinstance(result, ValidationFailure), expected
    assert result.field.startswith(("spec", "metadata")), result
    # Shape errors start with the field; the spec's own messages name the role, the field beside them.
    assert result.field in result.message or "TaskRole" in result.message, result


@pytest.mark.parametrize(("obj", "expected"), cases(Rejected, schema_only=True))
def test_what_only_the_schema_guards_the_controller_parses(obj: Any, expected: Rejected) -> None:
    assert isinstance(parse(obj), ParsedTaskSet), expected


def test_the_parse_never_changes_a_case() -> None:
    for case in CORPUS:
        obj = case.values[0]
        before = copy.deepcopy(obj)
        parse(obj)
        assert obj == before, case.id


def test_corpus_has_at_least_60_cases() -> None:
    assert len(CORPUS) >= 60
    ids = [case.id for case in CORPUS]
    assert len(set(ids)) == len(ids)


def test_every_case_is_read_by_exactly_one_test_here() -> None:
    read = [
        *cases(Fails, pod_creation=False),
        *cases(Fails, pod_creation=True),
        *cases(Succeeds),
        *cases(Rejected, schema_only=False),
        *cases(Rejected, schema_only=True),
    ]
    assert sorted(str(case.id) for case in read) == sorted(str(case.id) for case in CORPUS)
