"""One typed settings object with named profiles, from the environment, its query-time fields overridable per call."""

from __future__ import annotations

import dataclasses
import difflib
import numbers
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin, get_type_hints

from verityrag.errors import InvalidInputError
from verityrag.index.live import DENSE_BACKENDS, DenseBackend
from verityrag.index.store import Durability
from verityrag.retrieval.fusion import FUSION_MODES, FusionMode

ProfileName = Literal["default", "fast", "strict"]
PROFILES: tuple[str, ...] = get_args(ProfileName)
# The strictness levels, from the loosest: their one definition. verityrag.verify.strictness
# (its policy table), the API, the MCP server and the UI take them from here.
Strictness = Literal["loose", "balanced", "strict", "paranoid"]
STRICTNESS_LEVELS: tuple[str, ...] = get_args(Strictness)
# Earlier name of "loose", still accepted (VERITYRAG_STRICTNESS=lenient keeps working).
STRICTNESS_ALIASES: dict[str, Strictness] = {"lenient": "loose"}
GateLabel = Literal["evidence", "answer"]
# Where the index lives: in-process (LiveIndex) or an Elasticsearch cluster (ELASTICSEARCH_URL etc.).
Backend = Literal["embedded", "elasticsearch"]
BACKENDS: tuple[str, ...] = get_args(Backend)
ENV_PREFIX = "VERITYRAG_"
# VERITYRAG_* variables read outside Settings (by the module named). With one per Settings
# field they make ENV_VARS, which from_env checks the environment against.
OTHER_ENV_VARS: tuple[str, ...] = (
    "VERITYRAG_DATA_DIR",  # the entry points (verityrag.ingest.writer.data_dir_from_env): where documents persist
    "VERITYRAG_API_KEY",  # verityrag.api: the key write endpoints ask for
    "VERITYRAG_READ_KEY",  # verityrag.api: the key every other endpoint but /health asks for
    "VERITYRAG_ALLOWED_ORIGINS",  # verityrag.api: other sites whose pages may write
    "VERITYRAG_LOAD_BUNDLED",  # verityrag.api: start on the bundled corpus
    "VERITYRAG_MCP_MAX_DOCS",  # verityrag.mcp_server: bundled documents to load
    "VERITYRAG_API_URL",  # verityrag.mcp_server: serve the API at this URL (--api-url)
    "VERITYRAG_GEMMA_CACHE",  # verityrag.llm.local_gemma: the local gemma model's folder
    "VERITYRAG_REQUIRE_BROWSER",  # tests/ui/test_app_browser.py; .ci/run sets it
    "VERITYRAG_DATASETS",  # verityrag.datasets: the datasets root
    "VERITYRAG_REQUIRE_DATASETS",  # tests/conftest.py: a missing dataset fails; .ci/run sets it
    "VERITYRAG_TRAIN_DIR",  # verityrag.train: training state (data, checkpoints) of the recipes
    "VERITYRAG_QWEN_CACHE",  # verityrag.llm.local_qwen: the local Qwen model's folder
)


#: The fields naming where the learned checks' model folders are (the root, then one per check).
MODEL_DIR_FIELDS: tuple[str, ...] = (
    "models_dir",
    "answer_check_dir",
    "answerability_dir",
    "guard_dir",
    "reader_check_dir",
    "nli_dir",
)


class UnknownEnvVarWarning(UserWarning):
    """A ``VERITYRAG_*`` environment variable that VerityRAG does not read, most likely a typo."""


# Fields read from a variable other than VERITYRAG_<FIELD>: the names documented before the field
# was named (VERITYRAG_ANSWER_DIR is the answerability model's folder, VERITYRAG_READER_DIR the
# reader check's, not the extractive reader's: that is reader_model).
_FIELD_ENV_NAMES: dict[str, str] = {
    "profile_name": "PROFILE",
    "answerability_dir": "ANSWER_DIR",
    "reader_check_dir": "READER_DIR",
}


def _field_env_var(name: str) -> str:
    """The variable ``Settings.from_env`` reads for field ``name``."""
    return ENV_PREFIX + _FIELD_ENV_NAMES.get(name, name.upper())


# What each annotation of Settings admits (``from __future__`` keeps them as strings), and the
# plain type a value is stored as (numpy's numbers pass, stored as int / float so settings stay
# JSON-able). A bool is an int to isinstance, so it is refused where a number is meant, and
# only a real bool is taken as one: ``verify="no"`` was truthy, so it meant verification on.
_ADMITS: dict[str, tuple[type, type | None, str]] = {
    "int": (numbers.Integral, int, "an integer"),
    "float": (numbers.Real, float, "a number"),
    "float | None": (numbers.Real, float, "a number or None"),
    "bool": (bool, None, "true or false"),
    "str": (str, None, "a string"),
}


def _check_types(settings: Settings) -> None:
    """Refuse a value of the wrong type, naming the field (``top_k="5"`` was a bare TypeError
    from the first comparison; the environment path converts before it gets here)."""
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        annotation = str(f.type)
        if annotation == "float | None" and value is None:
            continue
        # The rest name Literals of strings: _check_choice names the allowed values.
        admits, plain, kind = _ADMITS.get(annotation, (str, None, "a string"))
        if (isinstance(value, bool) and admits is not bool) or not isinstance(value, admits):
            raise InvalidInputError(f.name, f"must be {kind}, got {value!r} ({type(value).__name__})")
        if plain is not None and type(value) is not plain:
            object.__setattr__(settings, f.name, plain(value))


@dataclass(frozen=True)
class Settings:
    """Every tunable of the pipeline. ``Settings.profile("strict")`` and ``.replace(...)`` make variants."""

    profile_name: ProfileName = "default"
    # chunking
    chunk_max_words: int = 128
    chunk_overlap_sentences: int = 1
    # retrieval
    top_k: int = 5
    candidates: int = 20  # hits the reranker sees (top_k of them when top_k is larger)
    # BM25-heavy weighted fusion: on the calibration questions BM25 alone finds the
    # gold chunk at rank 1 for 86%, hashed dense vectors for 51%, equal RRF 71%,
    # weighted with dense 0.2: 85.5% (the former diary: git show 147e66a:ROADMAP.md).
    fusion: FusionMode = "weighted"
    dense_weight: float = 0.2
    # "auto": exact dense search, then an hnswlib graph from 20k chunks for dense (model)
    # vectors; hashed vectors stay exact (decision 0043). "exact" / "hnsw" force one.
    dense_backend: DenseBackend = "auto"
    backend: Backend = "embedded"
    # limits on input
    max_document_chars: int = 1_000_000
    max_query_chars: int = 2_000
    # durability of the SQLite store (when a data dir is set)
    durability: Durability = "process"
    # A persistent index writes its image in the background every this many committed writes, or
    # this many seconds after the first write since the last image (0: not by that rule), so a
    # start after a crash replays at most about that tail (verityrag.ingest.checkpoints).
    checkpoint_writes: int = 10_000
    checkpoint_seconds: float = 300.0
    # answering
    verify: bool = True
    strictness: Strictness = "balanced"
    max_reformulations: int = 2
    # Retrieval-and-read hops a question may take: 2 lets a question the first read refuses, where
    # no passage names all it names, follow a bridge to a second document (verityrag.agent.hops),
    # and a comparison of time date each of its two things by its own document.
    # 1 (the default): one hop; on the user-domain and main benchmarks a second hop cost more
    # right refusals than it gained answers (docs/decisions/0074).
    max_hops: int = 1
    # Reformulate only when the gate's probability is at least this ("some signal").
    reformulation_signal_floor: float = 0.05
    # Share of unanswerable calibration questions the fitted gate must refuse.
    abstention_target: float = 0.97
    # What the sufficiency gate learns: "evidence" (a gold answer is in the evidence the
    # generator reads) or "answer" (the generated answer contains a gold answer).
    gate_label: GateLabel = "evidence"
    # The extractive reader: reads the best evidence sentences for the answer span, or finds none
    # (then the question is refused, AbstainReason.ANSWERABILITY). ``reader_model``: "" for the
    # reader shipped with VerityRAG, else a reader folder or a Hugging Face extractive-QA model
    # (name or local folder). ``reader_answer_threshold``: the reader's answer probability below
    # which it refuses (at the balanced level; the strictness level moves it); None: the one
    # ``calibrate`` fitted, else the model's own.
    reader: bool = True
    reader_model: str = ""
    reader_answer_threshold: float | None = None
    # The names, titles, numbers and dates a question mentions must be named by the passage that
    # holds the reader's span or by its document's title, else that span is no answer
    # (verityrag.text.subjects): the length of the other ship does not answer for this one.
    reader_subjects: bool = True
    # The answer check (verityrag.checks.answer_check): the reader's short answer, with the
    # sentence quoted for it, must read as the answer to the question, else it is refused (the
    # other clinic's price, another attribute of the same thing). ``answer_check_threshold``:
    # None for the one its model folder records (VERITYRAG_ANSWER_CHECK_DIR, else answer_check under
    # the models root: `make models-answer-check`).
    answer_check: bool = False
    answer_check_threshold: float | None = None
    # Refuse with AbstainReason.CONFLICT, naming both answers and their documents, when another
    # source (another document, or another source its metadata declares; never a title) gives
    # a different value of the answer's kind that the reader reads well enough
    # (agent.controller.CONFLICT_MARGIN). The bundled corpus declares each article its source:
    # an article's paragraphs answering a question with several answers do not disagree.
    report_conflicts: bool = True
    # The sufficiency gate refuses only when the index holds at least this many chunks: its
    # features (BM25 scores, IDF coverage, distinct documents) mean something else in a handful
    # of documents, where the reader decides alone. A price list and a leaflet (2 chunks) had
    # every question refused at gate probability 0.70 with the reader sure (logit 13); on the
    # dev domains (39-55 chunks each) 60 answers 45 of 135 for 43 at 0, every refusal kind
    # unchanged. 0: the gate decides at every corpus size.
    gate_min_chunks: int = 60
    # Independent documents (different declared sources, not near copies) among the evidence
    # that must say the answer for it to stand; fewer: AbstainReason.CORROBORATION. 1: none
    # asked for (verityrag.verify.sources; docs/decisions/0041-provenance-and-corroboration.md).
    min_sources: int = 1
    # Learned checks trained here (`make models`), off by default: each needs its model folder
    # (the *_dir fields below) and the pipeline refuses to start without it. A threshold of None
    # means: fitted by ``calibrate`` (the eval's rule), else the one the model folder's
    # metadata.json records.
    answerability_check: bool = False
    answerability_threshold: float | None = None
    guard_check: bool = False
    guard_threshold: float | None = None
    reader_check: bool = False
    reader_threshold: float | None = None
    # The reader check is on whenever an LLM writes the answers (reader_check or not): with the
    # shipped reader it took an offline instruct model's accuracy of all answers from 42% to 72%
    # (docs/decisions/0057). False: only reader_check decides.
    llm_reader_check: bool = True
    # Where the learned checks' model folders are (verityrag.models.folder), read by the entry
    # points like every field. ``models_dir``: the root, "" for the checkout's guard_work/ (where
    # `make models-*` builds them, whatever folder a program runs from). Each check's own field
    # names its folder; "" for <models root>/<its name>: answer_check, answerability_mpnet6,
    # guard, nli; for the reader check, reader_check when it was built, else the shipped reader.
    # Their variables: VERITYRAG_MODELS_DIR, VERITYRAG_ANSWER_CHECK_DIR, VERITYRAG_ANSWER_DIR
    # (answerability_dir), VERITYRAG_GUARD_DIR, VERITYRAG_READER_DIR (reader_check_dir) and
    # VERITYRAG_NLI_DIR (the NLI verifier, which the eval and the scripts build).
    models_dir: str = ""
    answer_check_dir: str = ""
    answerability_dir: str = ""
    guard_dir: str = ""
    reader_check_dir: str = ""
    nli_dir: str = ""

    def __post_init__(self) -> None:
        _check_types(self)
        _check_choice("profile_name", self.profile_name, PROFILES)
        _check_choice("fusion", self.fusion, FUSION_MODES)
        _check_choice("dense_backend", self.dense_backend, DENSE_BACKENDS)
        _check_choice("backend", self.backend, BACKENDS)
        _check_choice("durability", self.durability, ("process", "power"))
        if self.strictness in STRICTNESS_ALIASES:
            object.__setattr__(self, "strictness", STRICTNESS_ALIASES[self.strictness])
        _check_choice("strictness", self.strictness, STRICTNESS_LEVELS)
        _check_choice("gate_label", self.gate_label, ("evidence", "answer"))
        for name in (
            "chunk_max_words",
            "top_k",
            "candidates",
            "max_document_chars",
            "max_query_chars",
            "min_sources",
            "max_hops",
        ):
            if getattr(self, name) < 1:
                raise InvalidInputError(name, f"must be >= 1, got {getattr(self, name)!r}")
        if self.max_hops > 2:
            raise InvalidInputError("max_hops", f"the agent takes at most 2 hops, got {self.max_hops!r}")
        for name in ("chunk_overlap_sentences", "max_reformulations", "gate_min_chunks", "checkpoint_writes"):
            if getattr(self, name) < 0:
                raise InvalidInputError(name, f"must be >= 0, got {getattr(self, name)!r}")
        if not self.checkpoint_seconds >= 0:  # NaN too
            raise InvalidInputError("checkpoint_seconds", f"must be >= 0, got {self.checkpoint_seconds!r}")
        for name in ("abstention_target", "dense_weight"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise InvalidInputError(name, f"must be within [0, 1], got {getattr(self, name)!r}")
        for name in (
            "answerability_threshold",
            "guard_threshold",
            "reader_threshold",
            "reader_answer_threshold",
            "answer_check_threshold",
        ):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise InvalidInputError(name, f"must be within [0, 1] or unset, got {value}")

    @classmethod
    def profile(cls, name: str) -> Settings:
        """``default`` (gates and verification on), ``fast`` (verification off), ``strict``."""
        _check_choice("profile", name, PROFILES)
        if name == "fast":
            return cls(profile_name="fast", verify=False, max_reformulations=0)
        if name == "strict":
            return cls(profile_name="strict", strictness="strict", abstention_target=0.99)
        return cls()

    def model_dirs(self) -> dict[str, str]:
        """The :data:`MODEL_DIR_FIELDS` and their values: what an entry point that takes its other
        settings elsewhere (the eval's profile) adds from ``Settings.from_env()``."""
        return {name: getattr(self, name) for name in MODEL_DIR_FIELDS}

    def replace(self, **changes: Any) -> Settings:
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise InvalidInputError("settings", f"unknown setting(s): {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The profile named by ``VERITYRAG_PROFILE``, then any ``VERITYRAG_<FIELD>`` override.

        A bad value raises ``InvalidInputError`` naming the variable and the value. Any other
        ``VERITYRAG_*`` name (not in :data:`ENV_VARS`) warns with :class:`UnknownEnvVarWarning`:
        a typo would otherwise run on the default without a word."""
        env = os.environ if environ is None else environ
        _warn_unknown_env_vars(env)
        profile_var = _field_env_var("profile_name")
        try:
            base = cls.profile(env.get(profile_var, "default"))
        except InvalidInputError as exc:
            raise InvalidInputError(profile_var, exc.problem) from exc
        changes: dict[str, Any] = {}
        hints = get_type_hints(cls)
        for f in dataclasses.fields(cls):
            var = _field_env_var(f.name)
            raw = env.get(var)
            if raw is None or f.name == "profile_name":
                continue
            changes[f.name] = _parse(var, raw, hints[f.name])
        try:
            return base.replace(**changes) if changes else base
        except InvalidInputError as exc:
            # Validation names the field, right for Settings(...); here the user set a variable,
            # and the field name is nowhere in their environment. The problem carries the value.
            if exc.field not in changes:
                raise
            raise InvalidInputError(_field_env_var(exc.field), exc.problem) from exc


# Every VERITYRAG_* name the project reads: one per Settings field, then the others.
# tests/test_config.py greps the sources and the README against it, so it cannot fall behind.
ENV_VARS: tuple[str, ...] = (
    *(_field_env_var(f.name) for f in dataclasses.fields(Settings)),
    *OTHER_ENV_VARS,
)


def _warn_unknown_env_vars(env: Mapping[str, str]) -> None:
    """Warn (never raise: a script may set a name of its own) about unread ``VERITYRAG_*`` names."""
    # Compare what follows the prefix: every known name shares it, which alone would make any
    # VERITYRAG_ name "close" to some known one. Upper-cased, so verityrag_top_k is caught too.
    known = [name.removeprefix(ENV_PREFIX) for name in ENV_VARS]
    for name in sorted(env):
        if not name.upper().startswith(ENV_PREFIX) or name in ENV_VARS:
            continue
        close = difflib.get_close_matches(name[len(ENV_PREFIX) :].upper(), known, n=1)
        hint = (
            f"did you mean {ENV_PREFIX}{close[0]}?" if close else "the README lists the names VerityRAG reads"
        )
        warnings.warn(
            f"{name} is not a VerityRAG setting and is ignored; {hint}",
            UnknownEnvVarWarning,
            stacklevel=3,  # the caller of Settings.from_env
        )


def _check_choice(field: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InvalidInputError(field, f"{value!r} is not one of {', '.join(allowed)}")


def _parse(var: str, raw: str, hint: Any) -> Any:
    """``raw``, the value of variable ``var``, as the field's type: bool words, int, float, str
    (a Literal is checked later), or ``float | None``, where an empty value or "none" means unset."""
    kind = hint
    if get_origin(hint) is Literal:
        kind = str
    elif type(None) in get_args(hint):
        if raw.strip().lower() in ("", "none"):
            return None
        kind = next(a for a in get_args(hint) if a is not type(None))
    if kind is bool:
        lowered = raw.strip().lower()
        if lowered not in ("1", "0", "true", "false", "yes", "no"):
            raise InvalidInputError(var, f"cannot parse {raw!r}: use 1/0, true/false or yes/no")
        return lowered in ("1", "true", "yes")
    try:
        return kind(raw)
    except ValueError as exc:
        expected = {int: "an integer", float: "a number"}.get(kind, kind.__name__)
        raise InvalidInputError(var, f"cannot parse {raw!r} as {expected}") from exc
