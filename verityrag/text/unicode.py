"""Text that UTF-8 can carry. JSON can hold a lone surrogate (``"\\ud800"``, half an emoji);
Python keeps it in a ``str``, and writing it as UTF-8 fails: in a reply, the reply is lost."""

from __future__ import annotations

from verityrag.errors import InvalidInputError


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def utf8_safe(text: str) -> str:
    """``text`` with what UTF-8 cannot carry escaped as ``\\udXXX``: for echoing input in a reply."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def check_utf8(field: str, text: str) -> None:
    """Refuse ``text`` (naming ``field``) when UTF-8 cannot carry it: it could not be stored or
    sent back."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(field, f"is not valid Unicode text ({exc.reason})") from exc
