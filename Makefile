# causalkg: every target below the set-up ones calls only the `causalkg` CLI.
#   make kg      venv + corpus + linker + gate, QA and verifier models (installed from modelpack/) + extraction + KG + store
#   make models  train the gate, QA and verifier models here and rebuild modelpack/ from them
#   make test    the test suite (offline)
#   make serve   explore, verify and query the KG in a browser on http://127.0.0.1:8000/
# See the README for the rest.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
CK     := $(BIN)/causalkg
# setuptools announces every editable install ("Editable installation. Please be careful ..."): informational only.
PIP    := PYTHONWARNINGS="ignore:Editable installation:UserWarning" $(BIN)/pip --disable-pip-version-check -q
STAMP  := $(VENV)/.installed
ENDPOINT ?=
export HF_HUB_DISABLE_TELEMETRY := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: all venv system-deps wordnet corpus link qa-model gate-model tagger-model install-models models extract kg export eval serve test bench docs clean help

all: kg

help:
	@sed -n '1,/^$$/p' Makefile

# The virtualenv. torch is pinned by constraints.txt on every pip call, so no dependency can
# pull the multi-GB CUDA build.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -c constraints.txt --upgrade pip
	$(PIP) install -c constraints.txt torch==2.13.0
	$(PIP) install -c constraints.txt -e '.[dev,notebooks,bench,ray]'
	touch $(STAMP)

venv: $(STAMP)

# Debian packages the tests use: WordNet (METEOR offline) and Virtuoso (a real SPARQL server).
system-deps:
	bash scripts/install_system_deps.sh

# WordNet 3.0 for METEOR, offline: Debian's wordnet-base copied into the venv's nltk_data,
# with the lexnames file NLTK wants generated.
WORDNET := $(VENV)/nltk_data/corpora/wordnet/lexnames
$(WORDNET): | venv system-deps
	$(CK) eval setup-wordnet

wordnet: $(WORDNET)

corpus: venv
	$(CK) corpus build

link: corpus
	$(CK) link build

qa-model: venv
	$(CK) kg train-qa --if-missing

gate-model: venv
	$(CK) kg train-gate --if-missing

# The shipped models (float16 in modelpack/, checksummed), installed in float32: nothing is trained.
install-models: venv
	$(CK) kg install-models

# Retrain the three models on this machine and rebuild the package from them.
models: venv
	$(CK) kg train-gate
	$(CK) kg train-qa
	$(CK) kg train-verifier
	$(CK) kg build-modelpack --measure

tagger-model: venv
	$(CK) kg train-tagger --if-missing

extract: corpus install-models
	$(CK) kg extract

kg: link extract
	$(CK) kg assemble
	$(CK) kg export
	$(CK) kg summary
	@echo "next: 'make serve' to explore the KG in a browser, 'make eval' to measure it"

export: venv
	@test -n "$(ENDPOINT)" || (echo "usage: make export ENDPOINT=http://host:port/..."; exit 2)
	$(CK) kg export --endpoint "$(ENDPOINT)"

eval: venv
	$(CK) eval report

# The browser UI over the KG of `make kg` (127.0.0.1 only; see the README for serving colleagues).
serve: venv
	$(CK) serve

test: venv system-deps wordnet
	$(BIN)/python -m pytest -q -x --durations=15

bench: venv
	$(BIN)/python -m bench

docs: venv
	$(BIN)/python scripts/gen_cli_docs.py
	$(BIN)/python scripts/gen_api_docs.py
	$(BIN)/python scripts/gen_config_docs.py

clean:
	rm -rf data/ .pytest_cache
