"""Settings: named profiles, validated choices, per-call replace, environment overrides."""

from __future__ import annotations

import dataclasses
import re
import warnings
from pathlib import Path

import pytest

from verityrag import InvalidInputError, Settings
from verityrag.config import ENV_VARS, MODEL_DIR_FIELDS, OTHER_ENV_VARS, UnknownEnvVarWarning, _field_env_var

REPO_ROOT = Path(__file__).resolve().parent.parent

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
        ("dense_backend", "faiss", "auto, exact, hnsw"),
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


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("top_k", "5", r"top_k: must be an integer, got '5' \(str\)"),
        ("top_k", 5.0, "top_k: must be an integer"),
        ("top_k", True, "top_k: must be an integer, got True"),
        ("verify", "no", r"verify: must be true or false, got 'no'"),  # was truthy: verification on
        ("verify", 0, "verify: must be true or false"),
        ("dense_weight", "0.2", "dense_weight: must be a number"),
        ("guard_threshold", "0.5", "guard_threshold: must be a number or None"),
        ("strictness", 3, "strictness: must be a string"),
    ],
)
def test_settings_value_of_the_wrong_type_raises_naming_the_field(
    field: str, value: object, message: str
) -> None:
    # A bare TypeError from the first comparison before, or silently the wrong setting.
    with pytest.raises(InvalidInputError, match=message):
        Settings(**{field: value})
    with pytest.raises(InvalidInputError, match=message):
        Settings().replace(**{field: value})


def test_settings_numbers_of_the_other_kind_are_taken_as_plain_ones() -> None:
    import json

    import numpy as np

    s = Settings(dense_weight=1, guard_threshold=None, reader_threshold=np.float32(0.5), top_k=np.int64(7))
    assert (s.dense_weight, s.reader_threshold, s.top_k) == (1.0, 0.5, 7)
    assert (type(s.dense_weight), type(s.reader_threshold), type(s.top_k)) == (float, float, int)
    json.dumps(dataclasses.asdict(s))  # numpy's numbers are not JSON-able


def test_every_settings_field_has_its_type_checked() -> None:
    import typing

    from verityrag.config import _ADMITS

    hints = typing.get_type_hints(Settings)
    for f in dataclasses.fields(Settings):
        if str(f.type) in _ADMITS:
            continue
        # Anything else must be a Literal of strings, which the check reads as "a string".
        args = typing.get_args(hints[f.name])
        assert typing.get_origin(hints[f.name]) is typing.Literal, f.name
        assert all(isinstance(a, str) for a in args), f.name


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
        ({"VERITYRAG_TOP_K": "three"}, "VERITYRAG_TOP_K", "cannot parse 'three' as an integer"),
        ({"VERITYRAG_TOP_K": "2.5"}, "VERITYRAG_TOP_K", "cannot parse '2.5'"),
        ({"VERITYRAG_VERIFY": "maybe"}, "VERITYRAG_VERIFY", "cannot parse 'maybe': use 1/0"),
        ({"VERITYRAG_ABSTENTION_TARGET": "high"}, "VERITYRAG_ABSTENTION_TARGET", "cannot parse 'high'"),
        ({"VERITYRAG_READER_THRESHOLD": "low"}, "VERITYRAG_READER_THRESHOLD", "cannot parse 'low'"),
        ({"VERITYRAG_GUARD_CHECK": "on-ish"}, "VERITYRAG_GUARD_CHECK", "cannot parse 'on-ish'"),
    ],
)
def test_from_env_unparsable_value_raises_naming_variable(
    env: dict[str, str], field: str, message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message) as err:
        Settings.from_env(env)
    assert err.value.field == field


# A value that parses but that validation rejects: one per checked field. The user set the
# variable, so the error must name it, not the Settings field (``top_k`` is in no environment).
@pytest.mark.parametrize(
    ("var", "raw", "message"),
    [
        ("VERITYRAG_PROFILE", "turbo", "'turbo' is not one of default, fast, strict"),
        ("VERITYRAG_FUSION", "max", "'max' is not one of rrf, weighted"),
        ("VERITYRAG_DENSE_BACKEND", "faiss", "'faiss' is not one of auto, exact, hnsw"),
        ("VERITYRAG_BACKEND", "es", "'es' is not one of embedded, elasticsearch"),
        ("VERITYRAG_DURABILITY", "disk", "'disk' is not one of process, power"),
        ("VERITYRAG_STRICTNESS", "extreme", "'extreme' is not one of loose, balanced"),
        ("VERITYRAG_GATE_LABEL", "both", "'both' is not one of evidence, answer"),
        ("VERITYRAG_TOP_K", "0", "must be >= 1, got 0"),
        ("VERITYRAG_CANDIDATES", "-3", "must be >= 1, got -3"),
        ("VERITYRAG_CHUNK_MAX_WORDS", "0", "must be >= 1, got 0"),
        ("VERITYRAG_MAX_DOCUMENT_CHARS", "0", "must be >= 1, got 0"),
        ("VERITYRAG_MAX_QUERY_CHARS", "0", "must be >= 1, got 0"),
        ("VERITYRAG_CHUNK_OVERLAP_SENTENCES", "-1", "must be >= 0, got -1"),
        ("VERITYRAG_MAX_REFORMULATIONS", "-1", "must be >= 0, got -1"),
        ("VERITYRAG_ABSTENTION_TARGET", "1.5", r"must be within \[0, 1\], got 1.5"),
        ("VERITYRAG_DENSE_WEIGHT", "nan", r"must be within \[0, 1\], got nan"),
        ("VERITYRAG_READER_THRESHOLD", "2", r"must be within \[0, 1\] or unset, got 2.0"),
        ("VERITYRAG_GUARD_THRESHOLD", "-0.5", r"must be within \[0, 1\] or unset, got -0.5"),
    ],
)
def test_from_env_rejected_value_raises_naming_variable_and_value(var: str, raw: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message) as err:
        Settings.from_env({var: raw})
    assert err.value.field == var
    assert str(err.value).startswith(f"{var}: ")


def test_settings_keyword_errors_still_name_the_field_with_the_value() -> None:
    with pytest.raises(InvalidInputError, match="must be >= 1, got 0") as err:
        Settings(top_k=0)
    assert err.value.field == "top_k"


# ------------------------------------------------------------ unknown VERITYRAG_* names


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("VERITYRAG_STRICTNES", "VERITYRAG_STRICTNESS"),
        ("VERITYRAG_TOPK", "VERITYRAG_TOP_K"),
        ("VERITYRAG_PROFILE_NAME", "VERITYRAG_PROFILE"),  # the field's name, not the variable's
        ("VERITYRAG_DATADIR", "VERITYRAG_DATA_DIR"),  # read by the pipeline, not by Settings
        ("verityrag_top_k", "VERITYRAG_TOP_K"),  # environment names are case-sensitive on POSIX
    ],
)
def test_from_env_unknown_variable_warns_naming_closest_known_one(name: str, suggestion: str) -> None:
    with pytest.warns(UnknownEnvVarWarning, match=f"^{name} is not a VerityRAG setting") as record:
        settings = Settings.from_env({name: "strict"})
    assert settings == Settings()  # ignored, not guessed at
    assert len(record) == 1
    assert f"did you mean {suggestion}?" in str(record[0].message)
    assert record[0].filename == __file__  # points at the caller of from_env


def test_from_env_unknown_variable_without_close_match_warns_without_guess() -> None:
    with pytest.warns(UnknownEnvVarWarning, match="VERITYRAG_XYZZY is not a VerityRAG setting") as record:
        Settings.from_env({"VERITYRAG_XYZZY": "1"})
    assert "did you mean" not in str(record[0].message)


def test_from_env_unknown_variable_in_os_environ_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERITYRAG_STRICTNES", "strict")
    with pytest.warns(UnknownEnvVarWarning, match="did you mean VERITYRAG_STRICTNESS"):
        assert Settings.from_env().strictness == "balanced"


def test_from_env_every_known_variable_is_silent() -> None:
    env = {name: "" for name in OTHER_ENV_VARS}
    env |= {
        "VERITYRAG_PROFILE": "fast",
        "VERITYRAG_TOP_K": "3",
        "VERITYRAG_GUARD_THRESHOLD": "",
        "OTHER": "x",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning about any of them fails the test
        settings = Settings.from_env(env)
    assert settings.top_k == 3  # and the variables were read, not skipped


def test_env_vars_has_one_variable_per_field_and_no_duplicates() -> None:
    fields = [f.name for f in dataclasses.fields(Settings)]
    assert len(ENV_VARS) == len(set(ENV_VARS)) == len(fields) + len(OTHER_ENV_VARS)
    assert "VERITYRAG_PROFILE" in ENV_VARS
    assert "VERITYRAG_PROFILE_NAME" not in ENV_VARS
    renamed = {"profile_name", "answerability_dir", "reader_check_dir"}  # their documented names
    assert all(f"VERITYRAG_{name.upper()}" in ENV_VARS for name in fields if name not in renamed)
    assert {"VERITYRAG_ANSWERABILITY_DIR", "VERITYRAG_READER_CHECK_DIR"}.isdisjoint(ENV_VARS)


@pytest.mark.parametrize(
    ("variable", "field"),
    [
        ("VERITYRAG_MODELS_DIR", "models_dir"),
        ("VERITYRAG_ANSWER_CHECK_DIR", "answer_check_dir"),
        ("VERITYRAG_ANSWER_DIR", "answerability_dir"),
        ("VERITYRAG_GUARD_DIR", "guard_dir"),
        ("VERITYRAG_READER_DIR", "reader_check_dir"),
        ("VERITYRAG_NLI_DIR", "nli_dir"),
    ],
)
def test_from_env_maps_each_documented_model_folder_variable_to_its_field(variable: str, field: str) -> None:
    settings = Settings.from_env({variable: "/models/x"})
    assert getattr(settings, field) == "/models/x"
    assert settings.model_dirs() == {name: "" for name in MODEL_DIR_FIELDS} | {field: "/models/x"}
    assert variable not in OTHER_ENV_VARS  # a field's variable, read by Settings.from_env only


# Where VERITYRAG_* names are read, set or documented; this file is left out (it spells typos).
_SOURCES = ("verityrag", "scripts", "tests", "docs", ".ci", "app.py", "Makefile", "README.md")
_ENV_NAME = re.compile(r"\bVERITYRAG_[A-Z0-9_]*[A-Z0-9]\b")


def _files_naming_env_vars() -> list[Path]:
    files: list[Path] = []
    for source in (REPO_ROOT / name for name in _SOURCES):
        candidates = source.rglob("*") if source.is_dir() else [source]
        files += [
            path
            for path in candidates
            if path.is_file()
            and path.suffix in {"", ".py", ".md", ".sh"}
            and path.resolve() != Path(__file__)
        ]
    return files


def test_every_verityrag_variable_named_in_the_sources_is_known() -> None:
    """A variable read (or set, or documented) anywhere but missing from ENV_VARS would warn."""
    found: dict[str, Path] = {}
    for path in _files_naming_env_vars():
        for name in _ENV_NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(name, path.relative_to(REPO_ROOT))
    assert {"VERITYRAG_DATA_DIR", "VERITYRAG_GEMMA_CACHE", "VERITYRAG_LOAD_BUNDLED"} <= set(found)
    unknown = {name: str(path) for name, path in found.items() if name not in ENV_VARS}
    assert not unknown, f"add these to verityrag.config.OTHER_ENV_VARS: {unknown}"


def test_readme_lists_every_variable() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    missing = [name for name in ENV_VARS if f"`{name}`" not in readme]
    assert not missing, f"README's configuration table lacks {missing}"


def _readme_default_cell(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{int(value)}`"
    if isinstance(value, str):
        return f"`{value}`"
    return str(value)


def test_readme_table_shows_each_settings_default() -> None:
    """The README's defaults are typed by hand: each must be what Settings() holds."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    rows = {
        m.group(1): m.group(2).strip()
        for m in re.finditer(r"^\| `(VERITYRAG_[A-Z_]+)` \| ([^|]+) \|", readme, re.MULTILINE)
    }
    defaults = Settings()
    checked = 0
    for field in dataclasses.fields(Settings):
        var = _field_env_var(field.name)
        if var in rows:  # rows naming several variables share a default in words
            assert rows[var] == _readme_default_cell(getattr(defaults, field.name)), var
            checked += 1
    assert checked >= 15, f"only {checked} single-variable rows found: has the table's layout changed?"
