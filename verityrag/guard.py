"""``verityrag.guard.LearnedGuard``: kept importable here; the check lives in :mod:`verityrag.checks.guard`."""

from verityrag.checks.guard import LearnedGuard

__all__ = ["LearnedGuard"]
