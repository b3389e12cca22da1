"""Settings: named profiles, validated choices, per-call replace, environment overrides."""

from __future__ import annotations

import dataclasses

import pytest

from verityrag import InvalidInputError, Settings

pytestmark = pytest.mark.unit


def test_profile_default_has_verification_on_and_balanced_strictness() -> None:
    settings = Settings.profile("default")
    assert settings == Settings()
    assert settings.profile_name == "default"
    assert settings.verify is True
    assert settings.strictness == "balanced"


def test_profile_fast_turns_verification_off() -> None:
    settings = Settings.profile("fast")
    assert settings.profile_name == "fast"
    assert settings.verify is False


def test_profile_strict_is_strict_and_demands_more_support() -> None:
    settings = Settings.profile("strict")
    assert settings.profile_name == "strict"
    assert settings.verify is True
    assert settings.strictness == "strict"
    assert settings.abstention_target > Settings().abstention_target


def test_profile_unknown_name_lists_allowed_profiles() -> None:
    with pytest.raises(InvalidInputError, match="'turbo' is not one of default, fast, strict") as err:
        Settings.profile("turbo")
    assert err.value.field == "profile"


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("fusion", "max", "rrf, weighted"),
        ("dense_backend", "faiss", "exact, hnsw"),
        ("durability", "disk", "process, power"),
        ("strictness", "extreme", "loose, balanced, strict, paranoid"),
        ("profile_name", "turbo", "default, fast, strict"),
    ],
)
def test_settings_bad_choice_lists_allowed_values(field: str, value: str, allowed: str) -> None:
    with pytest.raises(InvalidInputError, match=f"'{value}' is not one of {allowed}") as err:
        Settings(**{field: value})  # type: ignore[arg-type]
    assert err.value.field == field


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("top_k", 0, "must be >= 1"),
        ("candidates", -3, "must be >= 1"),
        ("chunk_max_words", 0, "must be >= 1"),
        ("max_document_chars", 0, "must be >= 1"),
        ("max_query_chars", 0, "must be >= 1"),
        ("chunk_overlap_sentences", -1, "must be >= 0"),
        ("abstention_target", 1.5, r"must be within \[0, 1\]"),
        ("dense_weight", -0.1, r"must be within \[0, 1\]"),
        ("max_reformulations", -1, "must be >= 0"),
        ("reader_threshold", 1.2, r"must be within \[0, 1\] or unset"),
        ("guard_threshold", -0.5, r"must be within \[0, 1\] or unset"),
    ],
)
def test_settings_out_of_range_value_raises_naming_field(field: str, value: float, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message) as err:
        Settings(**{field: value})  # type: ignore[arg-type]
    assert err.value.field == field


def test_settings_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings().top_k = 3  # type: ignore[misc]


def test_replace_known_fields_returns_changed_copy() -> None:
    base = Settings.profile("strict")
    changed = base.replace(top_k=3, verify=False)
    assert (changed.top_k, changed.verify, changed.strictness) == (3, False, "strict")
    assert base.top_k == Settings().top_k


def test_replace_unknown_field_raises_naming_it() -> None:
    with pytest.raises(InvalidInputError, match=r"unknown setting\(s\): top_kk") as err:
        Settings().replace(top_kk=3)
    assert err.value.field == "settings"


def test_replace_invalid_value_is_validated() -> None:
    with pytest.raises(InvalidInputError, match="rrf, weighted"):
        Settings().replace(fusion="sum")


def test_from_env_empty_environment_gives_default_profile() -> None:
    assert Settings.from_env({}) == Settings()


def test_from_env_overrides_parse_each_type() -> None:
    settings = Settings.from_env(
        {
            "VERITYRAG_PROFILE": "strict",
            "VERITYRAG_TOP_K": "3",
            "VERITYRAG_VERIFY": "false",
            "VERITYRAG_FUSION": "rrf",
            "VERITYRAG_ABSTENTION_TARGET": "0.75",
            "VERITYRAG_DENSE_BACKEND": "hnsw",
            "UNRELATED": "ignored",
        }
    )
    assert settings.profile_name == "strict"
    assert settings.strictness == "strict"
    assert settings.top_k == 3
    assert settings.verify is False
    assert settings.fusion == "rrf"
    assert settings.abstention_target == 0.75
    assert settings.dense_backend == "hnsw"


def test_learned_checks_are_off_and_their_thresholds_open_by_default() -> None:
    s = Settings()
    assert (s.answerability_check, s.guard_check, s.reader_check) == (False, False, False)
    assert (s.answerability_threshold, s.guard_threshold, s.reader_threshold) == (None, None, None)


@pytest.mark.parametrize(("raw", "expected"), [("0.25", 0.25), ("0", 0.0), ("", None), ("None", None)])
def test_from_env_turns_a_learned_check_on_with_an_optional_threshold(
    raw: str, expected: float | None
) -> None:
    s = Settings.from_env({"VERITYRAG_READER_CHECK": "1", "VERITYRAG_READER_THRESHOLD": raw})
    assert s.reader_check is True
    assert s.reader_threshold == expected
    assert (s.answerability_check, s.guard_check) == (False, False)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("TRUE", True), ("yes", True), ("0", False), ("No", False), (" false ", False)],
)
def test_from_env_bool_spellings_parse(raw: str, expected: bool) -> None:
    assert Settings.from_env({"VERITYRAG_VERIFY": raw}).verify is expected


def test_from_env_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERITYRAG_TOP_K", "7")
    monkeypatch.setenv("VERITYRAG_PROFILE", "fast")
    settings = Settings.from_env()
    assert (settings.top_k, settings.profile_name, settings.verify) == (7, "fast", False)


@pytest.mark.parametrize(
    ("env", "field", "message"),
    [
        ({"VERITYRAG_TOP_K": "three"}, "VERITYRAG_TOP_K", "cannot parse 'three'"),
        ({"VERITYRAG_TOP_K": "2.5"}, "VERITYRAG_TOP_K", "cannot parse '2.5'"),
        ({"VERITYRAG_VERIFY": "maybe"}, "VERITYRAG_VERIFY", "cannot parse 'maybe'"),
        ({"VERITYRAG_ABSTENTION_TARGET": "high"}, "VERITYRAG_ABSTENTION_TARGET", "cannot parse 'high'"),
        ({"VERITYRAG_TOP_K": "0"}, "top_k", "must be >= 1"),
        ({"VERITYRAG_FUSION": "max"}, "fusion", "rrf, weighted"),
        ({"VERITYRAG_PROFILE": "turbo"}, "profile", "default, fast, strict"),
        ({"VERITYRAG_READER_THRESHOLD": "low"}, "VERITYRAG_READER_THRESHOLD", "cannot parse 'low'"),
        ({"VERITYRAG_READER_THRESHOLD": "2"}, "reader_threshold", r"within \[0, 1\]"),
        ({"VERITYRAG_GUARD_CHECK": "on-ish"}, "VERITYRAG_GUARD_CHECK", "cannot parse 'on-ish'"),
    ],
)
def test_from_env_bad_value_raises_naming_variable_or_field(
    env: dict[str, str], field: str, message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message) as err:
        Settings.from_env(env)
    assert err.value.field == field
