# Two commands for a fresh machine: `make run` and `make test`. Both create or
# reuse .venv and install torch==2.13.0 (the local CPU wheel) before the rest, then
# build the bundled corpus (`make data`).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
LINTED := verityrag tests scripts data app.py
REQS := requirements.txt requirements-dev.txt pyproject.toml
# The package with the extras the product and its tests use, and their dependencies, as
# pyproject.toml declares them (no --no-deps: a dependency it forgets fails here, not in a user's
# install). requirements*.txt pin the versions in the same resolution, so CI is reproducible and
# a pin outside pyproject.toml's range stops the install. `ner` (spaCy) is installed apart, by the
# one recipe that uses it (requirements-models.txt).
EXTRAS := api,mcp,app,models,train,eval,elasticsearch,fast,ann
STAMP := $(VENV)/.installed-$(shell cat $(REQS) | sha1sum | cut -c1-12)

.PHONY: setup data train-reader train-reader-domains run ask browser test check lint format bench bench-scale bench-scale-10m bench-bm25s bench-checks bench-es eval eval-domains eval-multihop models models-answer-check models-answerability models-answerability-mpnet models-guard models-nli models-nli-ragtruth models-nli3 models-reader readme-results demo bench-api schemathesis clean eval-llm eval-llm-checks eval-llm-reader

$(STAMP): $(REQS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q --no-build-isolation -r requirements.txt -r requirements-dev.txt -e ".[$(EXTRAS)]"
	rm -f $(VENV)/.installed-*
	touch $@

setup: $(STAMP) data

# The bundled corpus and question sets, built from the datasets root (VERITYRAG_DATASETS, default
# ../shared/data) into the git-ignored data/built/; what is missing there is fetched from its
# official source first. Seconds, and nothing at all when data/built/ is up to date.
data: $(STAMP)
	@$(PY) -m verityrag.datasets fetch
	@$(PY) data/build_corpus.py --if-stale

# The API and the Streamlit app on the bundled corpus; prints their URLs.
run: setup
	$(PY) -m verityrag.serve

# Questions in the terminal: to the API that `make run` serves when it answers (its index, with
# what you added; API_URL=... for another address), else the bundled corpus in an index of its own.
ask: setup
	$(PY) -m verityrag $(if $(API_URL),--api-url $(API_URL))

# Debian chromium for the headless-browser test of the Streamlit app (root, or skipped with a note).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && \
	  { apt-get install -y -q chromium >/dev/null || { apt-get update -q && apt-get install -y -q chromium >/dev/null; }; } } || \
	  echo "chromium not installed (needs root: apt-get install chromium); the browser test will skip"

test: setup browser check
	$(PY) -m pytest

check: setup
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/mypy

format: setup
	$(VENV)/bin/ruff format $(LINTED)
	$(VENV)/bin/ruff check --fix $(LINTED)

bench: setup
	$(PY) scripts/bench_index.py

# The index at 100k, 300k and 1M chunks, against the BM25 engines a user would pick instead (bm25s,
# rank_bm25, Haystack's in-memory store, tantivy), about an hour on 2 cores; not in CI. The engines
# live in their own virtualenv: they never become VerityRAG's dependencies.
PEERS_VENV := guard_work/bench_peers_venv
$(PEERS_VENV)/.installed:
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install -q bm25s numba rank-bm25 haystack-ai PyStemmer numpy scipy
	$(PEERS_VENV)/bin/pip install -q tantivy || echo "tantivy did not install: its row will say so"
	touch $@

bench-scale: setup $(PEERS_VENV)/.installed
	$(PY) scripts/bench_scale.py
	$(PY) scripts/update_readme_results.py

# BM25 top-10 against bm25s with the passes of each interleaved, so that a busy machine slows both
# alike (100k and 1M chunks, ~10 min; not in CI).
bench-bm25s: setup $(PEERS_VENV)/.installed
	$(PY) scripts/bench_bm25s_interleaved.py
	$(PY) scripts/update_readme_results.py

# Ten million chunks added to that table as a column of its own (about two hours, ~20 GB of RAM;
# not in CI). In memory only: at 10M the SQLite store and its image would need ~70 GB of disk.
bench-scale-10m: setup $(PEERS_VENV)/.installed
	$(PY) scripts/bench_scale.py --scales 10000000 --no-durable --no-ann --peers bm25s --merge
	$(PY) scripts/update_readme_results.py

eval: setup
	$(PY) -m verityrag.eval --plots-dir docs/eval
	$(PY) -m verityrag.eval --real-embeddings --out eval_report_real_embeddings.json --plots-dir docs/eval/real_embeddings
	$(PY) scripts/update_readme_results.py

# The user-domain benchmark (python -m verityrag.eval --domains): the dev and test domains, each alone
# and beside the bundled corpus; DOMAINS is the folder of the team's made-up domains.
DOMAINS ?= ../shared/domains
eval-domains: setup
	$(PY) -m verityrag.eval --domains $(DOMAINS)/dev
	$(PY) -m verityrag.eval --domains $(DOMAINS)/test
	$(PY) scripts/update_readme_results.py

# Questions that need two documents (python -m verityrag.eval --multihop): the first 500 held-out
# HotpotQA questions of HaluEval QA, with shipped defaults and with a second hop allowed.
eval-multihop: setup
	$(PY) -m verityrag.eval --multihop heldout --max-test-questions 500
	VERITYRAG_MAX_HOPS=2 $(PY) -m verityrag.eval --multihop heldout --max-test-questions 500 --out eval_report_multihop_heldout_hops2.json

# The recipes that build the shipped and served models (verityrag/train; `$(TRAIN) --help` lists them).
TRAIN := $(PY) -m verityrag.train

# The shipped gate and confidence model are fitted across corpus sizes and styles: the bundled corpus,
# each calibration article alone and the training domains each alone (decision 0070).
SHIPPED_GATE := $(TRAIN) gate --articles-alone --domains $(DOMAINS)/train
SHIPPED_CONFIDENCE := $(TRAIN) confidence --domains $(DOMAINS)/train

models: setup models-answer-check models-answerability models-answerability-mpnet models-guard models-nli models-reader
	$(TRAIN) selector
	$(SHIPPED_GATE)
	$(SHIPPED_CONFIDENCE)

# The extractive reader shipped in verityrag/resources/reader: SQuAD v1.0 train + SQuAD 2.0 split_a
# and synthetic unanswerables, all-MiniLM-L6-v2, as many steps as fit in READER_MINUTES here (the
# step rate is measured; warm-up and the decay to zero end inside the budget), then measured (~10
# min) and shipped when better on the validation articles. Its state lives in VERITYRAG_TRAIN_DIR
# (default ~/.cache/verityrag/train): an interrupted run continues, with its plan, when run again.
# Then the default gate, refitted with the reader's features.
# With glibc's malloc the run's memory grows by ~280 MB a minute (batches of every length; 11.5 GB
# after 45 min, an out-of-memory stop before the end); jemalloc (Debian: libjemalloc2) holds it
# at 2-3 GB, and is used when it is installed.
READER_MINUTES ?= 140
JEMALLOC := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/aarch64-linux-gnu/libjemalloc.so.2))
train-reader: setup
	$(if $(JEMALLOC),LD_PRELOAD=$(JEMALLOC)) $(HEAVY) $(TRAIN) reader --budget-minutes $(READER_MINUTES) --compile --lr 1e-4 --ship
	$(HEAVY) $(SHIPPED_GATE)
	$(HEAVY) $(SHIPPED_CONFIDENCE)

# The reader trained further on user domains, as the shipped one was (decision 0070): from the shipped
# int8 reader read back into torch weights (or READER_START, e.g. an earlier run's <work>/model), a
# quarter of the SQuAD examples replayed and the training domains (plus READER_DOMAINS, e.g. more
# written the same way) three times; then the gate and the confidence model refitted.
READER_WORK ?= $(HOME)/.cache/verityrag/train/reader-domains
READER_START ?= $(HOME)/.cache/verityrag/train/reader-shipped-torch
READER_DOMAINS ?=
train-reader-domains: setup
	test -d $(READER_START) || $(TRAIN) dequantize --out $(READER_START)
	$(if $(JEMALLOC),LD_PRELOAD=$(JEMALLOC)) $(HEAVY) $(TRAIN) reader --work $(READER_WORK) --base-model $(READER_START) \
	  --domains $(DOMAINS)/train $(foreach d,$(READER_DOMAINS),--domains $(d)) --squad-fraction 0.25 --domain-repeat 3 \
	  --budget-minutes $(READER_MINUTES) --compile --seed 21 --data-seed 13 --ship
	$(HEAVY) $(SHIPPED_GATE)
	$(HEAVY) $(SHIPPED_CONFIDENCE)

# The answer check (verityrag/checks/answer_check.py): the question and the reader's short answer against
# the sentence quoted for it. Pairs from SQuAD (gold answers; plausible answers and other questions'
# answers as negatives) and the training domains asked with the reader's threshold open
# (CHECK_DOMAINS: more folders of domains, never dev or test), then a MiniLM for CHECK_MINUTES.
CHECK_MINUTES ?= 20
CHECK_DOMAINS ?=
models-answer-check: setup
	$(TRAIN) answer-check-data --domains $(DOMAINS)/train $(foreach d,$(CHECK_DOMAINS),--domains $(d))
	$(HEAVY) $(TRAIN) answer-check --max-minutes $(CHECK_MINUTES)

# Cross-encoders (served by verityrag.models), trained by verityrag.train here on CPU into guard_work/ (git-ignored).
# Each takes 15-35 min of both cores; the lock keeps heavy jobs one at a time. The
# commands are the ones the figures in scripts/results/crossenc_*.json were measured with
# (recorded there as scripts/*.py, the same recipes with the same options before they moved).
HEAVY := flock /tmp/verityrag-heavy.lock
# Answerability: two stages on the SQuAD pairs, then a third with synthetic unanswerables whose
# name swaps keep the spaCy NER type (spaCy is needed only here: requirements-models.txt).
# Each stage is a file target (its results.json, written last), so an interrupted build restarts
# at the first unfinished stage; each pair set is built once, in its own folder.
ANSWER_STAGES := guard_work/answerability_stages
ANSWER_PLAIN := guard_work/answerability/data_plain/train.jsonl.gz
ANSWER_DATA := guard_work/answerability/data/train.jsonl.gz
models-answerability: setup guard_work/answerability/results.json

$(ANSWER_PLAIN):
	$(TRAIN) answerability-data --synthetic-share 0 --out $(@D)

$(ANSWER_DATA):
	$(PY) -m pip install -q -r requirements-models.txt
	$(TRAIN) answerability-data --synthetic-share 0.3 --typed-entities --out $(@D)

$(ANSWER_STAGES)/stage1/results.json: | $(ANSWER_PLAIN)
	$(HEAVY) $(TRAIN) answerability --data $(dir $(ANSWER_PLAIN)) --lr 1e-4 --epochs 2 --max-minutes 35 --out $(@D) --results $@

$(ANSWER_STAGES)/stage2/results.json: $(ANSWER_STAGES)/stage1/results.json
	$(HEAVY) $(TRAIN) answerability --data $(dir $(ANSWER_PLAIN)) --warm-start $(<D) --lr 5e-5 --epochs 2 --max-minutes 30 --out $(@D) --results $@

guard_work/answerability/results.json: $(ANSWER_STAGES)/stage2/results.json | $(ANSWER_DATA)
	$(HEAVY) $(TRAIN) answerability --warm-start $(<D) --lr 5e-5 --epochs 1 --max-minutes 24 --out $(@D) --results $@
	cp $@ scripts/results/crossenc_answerability.json

# The stronger answerability gate (ROADMAP, backlog item 1): all-mpnet-base-v2 (five PyPI wheels,
# `$(TRAIN) mpnet-base`) trained two epochs on the same pairs, then cut to its first 6 layers and
# trained two more, which halves its cost per pair and fits it under 100 MB as int8. ~5 h of
# both cores (session 13: the first epoch took 105 min to train, 3 min to export and evaluate).
# It is the served gate (the default VERITYRAG_ANSWER_DIR); it trains on the MiniLM gate's last-stage
# pairs, guard_work/answerability/data (built when missing, without training the MiniLM gate).
# The last epoch (session 10: validation AUROC 0.791 -> 0.806, split_b 0.740 -> 0.745) is
# crossenc_answerability_mpnet6_epoch2.json; session 15's rebuild by this recipe (the same
# figures) is crossenc_answerability_mpnet6_recipe.json.
# Each step is a file target (its results.json, written only when the run has finished, exported
# and been evaluated), so an interrupted recipe restarts at the first step that has not finished.
MPNET := guard_work/all-mpnet-base-v2
MPNET_RUNS := guard_work/answerability_mpnet
ANSWER_MPNET := $(TRAIN) answerability --base-model $(MPNET)
models-answerability-mpnet: setup guard_work/answerability_mpnet6/results.json

$(MPNET)/model.safetensors:
	$(TRAIN) mpnet-base --out $(MPNET)

$(MPNET_RUNS)/epoch1/results.json: $(MPNET)/model.safetensors | $(ANSWER_DATA)
	$(HEAVY) $(ANSWER_MPNET) --lr 4e-5 --epochs 1 --seed 13 --out $(@D) --results $@

$(MPNET_RUNS)/epoch2/results.json: $(MPNET_RUNS)/epoch1/results.json
	$(HEAVY) $(ANSWER_MPNET) --warm-start $(<D) --lr 2e-5 --epochs 1 --seed 1 --out $(@D) --results $@

$(MPNET_RUNS)/cut6/results.json: $(MPNET_RUNS)/epoch2/results.json
	$(HEAVY) $(ANSWER_MPNET) --warm-start $(<D) --keep-layers 6 --lr 3e-5 --epochs 1 --seed 2 --out $(@D) --results $@

guard_work/answerability_mpnet6/results.json: $(MPNET_RUNS)/cut6/results.json
	$(HEAVY) $(ANSWER_MPNET) --warm-start $(<D) --lr 2e-5 --epochs 1 --seed 3 --out $(@D) --results $@
	cp $@ scripts/results/crossenc_answerability_mpnet6_recipe.json

# The guard is trained on HaluEval, then continued with gemma-3-270m's own answers to
# HaluEval questions, labelled against the gold answer (generating them takes ~45 min).
# Each step is a file target, so an interrupted build restarts at the first unfinished step:
# a training stage's results.json is written last; gemma's answers are appended as they come
# (a rerun skips the items already answered), and a split's .done stamp marks it finished.
GUARD := guard_work/guard
GUARD_DATA := $(GUARD)/data/train.jsonl.gz
GUARD_STAGE1 := guard_work/guard_stages/stage1/results.json
GEMMA_RAW := guard_work/gemma_answers
GUARD_GEMMA := $(TRAIN) gemma-answers
models-guard: setup $(GUARD)/final.json

$(GUARD_DATA):
	$(TRAIN) guard-data

$(GUARD_STAGE1): | $(GUARD_DATA)
	$(HEAVY) $(TRAIN) guard --max-pairs 12000 --max-minutes 12 --lr 7e-5 --out $(@D) --results $@

$(GEMMA_RAW)/test.done: | $(GUARD_DATA)
	$(HEAVY) $(GUARD_GEMMA) --split test --items 300
	touch $@

$(GEMMA_RAW)/train.done: | $(GUARD_DATA)
	$(HEAVY) $(GUARD_GEMMA) --split train --items 1400 --max-minutes 32
	touch $@

$(GEMMA_RAW)/validation.done: | $(GUARD_DATA)
	$(HEAVY) $(GUARD_GEMMA) --split validation --items 300
	touch $@

$(GUARD)/results.json: $(GUARD_STAGE1) $(GEMMA_RAW)/test.done $(GEMMA_RAW)/train.done
	$(HEAVY) $(TRAIN) guard --warm-start $(<D) --gemma-repeat 3 --max-pairs 6000 --max-minutes 12 --lr 3e-5 --out $(@D) --results $@

# The threshold refitted with gemma's validation answers on hand, the probe and the live
# latency check; final.json (the guard's figures) is written last.
$(GUARD)/final.json: $(GUARD)/results.json $(GEMMA_RAW)/validation.done
	$(HEAVY) $(TRAIN) guard --refit-threshold --out $(@D) --results scripts/results/crossenc_guard.json
	$(HEAVY) $(PY) scripts/guard_probe.py
	$(HEAVY) $(PY) scripts/guard_bench_live.py
	cp scripts/results/crossenc_guard.json $@

# The NLI verifier warm-starts from the guard and mixes in its HaluEval rows: guard first.
# File targets, as above: the pairs by their validation file (nli-data writes it last), the
# model by its results.json (a copy of its figures, written once training, export and evaluation
# have finished), each adapted fold by a stamp; an interrupted build restarts where it stopped.
NLI := guard_work/nli
NLI_DATA := $(NLI)/data/validation.jsonl.gz
NLI_RAGTRUTH := guard_work/nli_ragtruth
models-nli: setup $(NLI)/results.json

$(NLI_DATA): $(GUARD)/final.json
	$(TRAIN) nli-data

$(NLI)/results.json: $(NLI_DATA)
	$(HEAVY) $(TRAIN) nli --epochs 1 --max-minutes 30 --lr 5e-5
	cp scripts/results/crossenc_nli.json $@

# The three-way NLI model on SNLI + MultiNLI + WiCE dev (docs/decisions/0051), measured on WiCE test,
# RAGTruth and HaluEval. File targets: the pairs by wice_test (nli3-data writes it last), the model by
# its results.json (written once trained and measured). Training stops after NLI3_MINUTES with a
# checkpoint (exit 75): run `make models-nli3` again to continue. CUDA is used when present.
NLI3 := guard_work/nli3
NLI3_MINUTES ?= 120
models-nli3: setup $(NLI3)/results.json

$(NLI3)/data/wice_test.jsonl.gz:
	$(TRAIN) nli3-data

$(NLI3)/results.json: $(NLI3)/data/wice_test.jsonl.gz
	$(HEAVY) $(TRAIN) nli3 --max-minutes $(NLI3_MINUTES) --ragtruth

# The reader check's extractive reader: the extractive-QA answerability model (span + no-answer head,
# warm-started from the answerability classifier, two epochs on the SQuAD pairs), then a third epoch
# with HaluEval QA's training items added (`$(TRAIN) reader-check-data`), ~80 min in all; exported with its
# start / end logits, its threshold fitted on gemma's labelled validation answers (guard's first).
# Each step is a file target (a stage's results.json, written last; the reader's by a copy of
# its figures), so an interrupted build restarts at the first unfinished step.
SPAN := guard_work/answer_span
READER_DATA := guard_work/reader_data/halueval_qa.jsonl.gz
models-reader: setup guard_work/reader_check/results.json

$(READER_DATA):
	$(TRAIN) reader-check-data

$(SPAN)/stage1/results.json: guard_work/answerability/results.json
	$(HEAVY) $(TRAIN) answerability --span --warm-start $(<D) --out $(@D) --lr 5e-5 --epochs 1 --results $@

$(SPAN)/stage2/results.json: $(SPAN)/stage1/results.json
	$(HEAVY) $(TRAIN) answerability --span --warm-start $(<D) --out $(@D) --lr 3e-5 --epochs 1 --seed 14 --results $@

$(SPAN)/results.json: $(SPAN)/stage2/results.json | $(READER_DATA)
	$(HEAVY) $(TRAIN) answerability --span --warm-start $(<D) --extra-train $(READER_DATA) --out $(@D) --lr 3e-5 --epochs 1 --seed 15 --max-minutes 45 --results $@

guard_work/reader_check/results.json: $(SPAN)/results.json $(GUARD)/final.json
	$(HEAVY) $(TRAIN) reader-check
	cp scripts/results/reader_check.json $@

# The NLI model fine-tuned on RAGTruth's sources in two folds, each a quarter of the sources (half of the
# benchmark's fitting half): each row holds the other fold out, and the `folds` row cross-fits the pair.
models-nli-ragtruth: setup $(NLI_RAGTRUTH)/adapt.done $(NLI_RAGTRUTH)_b2/adapt.done

$(NLI_RAGTRUTH)/adapt.done: $(NLI)/results.json
	$(HEAVY) $(TRAIN) nli-ragtruth --epochs 2
	touch $@

$(NLI_RAGTRUTH)_b2/adapt.done: $(NLI)/results.json
	$(HEAVY) $(TRAIN) nli-ragtruth --epochs 2 --bucket 2
	touch $@

readme-results: setup
	$(PY) scripts/update_readme_results.py

demo: setup
	$(PY) scripts/demo_streaming.py

bench-es: setup
	$(PY) scripts/bench_elasticsearch.py

# CONFIGS=answerability (a comma-separated subset) measures only those checks, plus "none".
bench-checks: setup
	$(HEAVY) $(PY) scripts/bench_learned_checks.py $(if $(CONFIGS),--configs $(CONFIGS))

bench-api: setup
	$(PY) scripts/bench_api.py

# The eval with the offline Qwen2.5-Coder-0.5B-Instruct writing the answers to the whole test split
# (its six wheels from requirements-llm.txt; docs/llm.md): ~65 min on 2 cores, nearly all of it the
# model's decoding. PROVIDER=gemma for the gemma-3-270m base model; LLM_QUESTIONS=60 for a stratified
# sample (~10 min). Every answer is recorded in guard_work/eval/llm_answers_$(PROVIDER).jsonl.
PROVIDER ?= local
LLM_QUESTIONS ?=
eval-llm: setup
	$(if $(filter local,$(PROVIDER)),$(PY) -m pip install -q --no-deps -r requirements-llm.txt)
	$(HEAVY) $(PY) -m verityrag.eval --real-llm $(PROVIDER) --no-plots $(if $(LLM_QUESTIONS),--max-test-questions $(LLM_QUESTIONS))

# Each verifier, the guard, the reader check and their stacks scored on those recorded answers (a
# minute; the learned checks whose models are built, the shipped reader and the model-free ones):
# scripts/results/llm_checks_$(PROVIDER).json, then the README and docs/results.md tables.
eval-llm-checks: setup
	$(PY) scripts/score_llm_answers.py --answers guard_work/eval/llm_answers_$(PROVIDER).jsonl \
	  --report eval_report_llm_$(PROVIDER).json --out scripts/results/llm_checks_$(PROVIDER).json
	$(PY) scripts/update_readme_results.py

# The whole test split with gemma writing the answers and the reader check recorded (~32 min; needs
# make models-reader); the answers, with their evidence and verdicts, are kept gzipped. A new reader
# is measured on the same answers with scripts/reader_rescore_llm.py (seconds).
eval-llm-reader: setup
	$(HEAVY) $(PY) -m verityrag.eval --real-llm gemma --reader --no-plots --out scripts/results/llm_eval_reader_local.json
	gzip -f guard_work/eval/llm_answers_gemma.jsonl

schemathesis: setup
	$(PY) scripts/run_schemathesis.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache
