# Two commands for a fresh machine: `make run` and `make test`. Both create or
# reuse .venv and install torch==2.13.0 (the local CPU wheel) before the rest.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
LINTED := verityrag tests scripts data
REQS := requirements.txt requirements-dev.txt pyproject.toml
STAMP := $(VENV)/.installed-$(shell cat $(REQS) | sha1sum | cut -c1-12)

.PHONY: setup run test check lint format bench eval models readme-results demo bench-api schemathesis clean demo bench-api schemathesis

$(STAMP): $(REQS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements.txt -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	rm -f $(VENV)/.installed-*
	touch $@

setup: $(STAMP)

run: setup
	$(PY) -m verityrag

test: setup check
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

eval: setup
	$(PY) -m verityrag.eval
	$(PY) -m verityrag.eval --real-embeddings --out eval_report_real_embeddings.json --plots-dir docs/eval/real_embeddings
	$(PY) scripts/update_readme_results.py

models: setup
	$(PY) scripts/train_sentence_selector.py
	$(PY) scripts/train_default_gate.py

readme-results: setup
	$(PY) scripts/update_readme_results.py

demo: setup
	$(PY) scripts/demo_streaming.py

bench-api: setup
	$(PY) scripts/bench_api.py

schemathesis: setup
	$(PY) scripts/run_schemathesis.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache
