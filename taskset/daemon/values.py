"""How the configuration shows values to people: in one-line error messages, in ``--help`` and the
settings table, and in the log (without credentials)."""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit, urlunsplit

_SHOWN_VALUE_MAX: Final = 60  # characters of a value quoted in an error message


def show(raw: object) -> str:
    """A value for a one-line error message: control characters escaped, long values cut."""
    text = str(raw)
    if not text.isprintable():
        text = text.encode("unicode_escape").decode("ascii")
    if len(text) > _SHOWN_VALUE_MAX:
        text = text[: _SHOWN_VALUE_MAX - 3] + "..."
    return text


def show_default(value: object) -> str:
    """A setting's default as ``--help`` and the settings table show it."""
    if isinstance(value, tuple):
        return '""' if not value else ",".join(str(item) for item in value)
    if isinstance(value, bool):
        return str(value).lower()
    if value == "":
        return '""'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def mask_userinfo(url: str) -> str:
    """``url`` with any user name and password replaced, for logs."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
