"""Text that UTF-8 can carry. JSON can hold a lone surrogate (``"\\ud800"``, half an emoji);
Python keeps it in a ``str``, and writing it as UTF-8 fails: in a reply, the reply is lost."""

from __future__ import annotations


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
