"""The ``--config`` file: YAML read into the settings' keys, with errors that name the file and the line."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, Final

import yaml

from taskset.api.constants import LOGGER_NAME

# The original's controllerName key: accepted and ignored, the name is always TaskSetController (9.1).
IGNORED_FILE_KEY: Final = "controllerName"


class ConfigError(Exception):
    """A configuration that cannot be used; ``str()`` is the one-line message for the user."""


def read_config_file(
    path: str, read_file: Callable[[str], str], known: set[str], warnings: list[str]
) -> dict[str, Any]:
    """The file's keys and values; a key not in ``known`` is a warning (with the nearest known key),
    a file that cannot be read or is not a YAML mapping an error naming it and, for YAML, the line."""
    try:
        text = read_file(path)
    except OSError as err:
        raise ConfigError(f"cannot read config file '{path}': {err.strerror or err}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        where = ""
        mark = getattr(err, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(err, "problem", None) or "syntax error"
        raise ConfigError(f"config file '{path}' is not valid YAML{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file '{path}' must hold a mapping of keys to values")
    for key in data:
        if key == IGNORED_FILE_KEY:
            if data[key] not in (None, LOGGER_NAME):
                warnings.append(
                    f"config file '{path}': {IGNORED_FILE_KEY} is ignored; the name is {LOGGER_NAME}"
                )
        elif key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            warnings.append(f"config file '{path}': unknown key '{key}' ignored{hint}")
    return data
