# The two commands: `make run` (serve on embedded defaults, or the production path when
# DATABASE_URL/REDIS_URL are set) and `make test`. Both create the virtualenv first, from the
# lockfile (requirements-test.lock: pinned, with hashes). `make lock` regenerates the lockfiles
# from pyproject.toml (new dependencies added, existing pins kept; `make lock ARGS=--upgrade`
# moves every pin to the newest release).
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/gateway

.PHONY: run worker beat test bench install lock

LOCK := $(VENV)/bin/uv pip compile pyproject.toml --generate-hashes --universal --python-version 3.11 -q

$(VENV)/.installed: requirements-test.lock
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q --require-hashes -r requirements-test.lock
	touch $@

# The test lock (main dependencies and the test extra) first, then the main lock held to the
# same versions; the Dockerfile installs requirements.lock.
lock:
	test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q "uv>=0.5"
	$(LOCK) --extra test $(ARGS) -o requirements-test.lock
	$(LOCK) -c requirements-test.lock $(ARGS) -o requirements.lock

install: $(VENV)/.installed

run: $(VENV)/.installed
	$(PY) manage.py migrate -v0
	@echo "Serving on http://$(HOST):$(PORT)/v1 — create an API key with: $(PY) manage.py create_tenant NAME"
	$(PY) -m gateway.serve -b $(HOST) -p $(PORT) gateway.asgi:application

worker: $(VENV)/.installed
	$(VENV)/bin/celery -A gateway worker -l info

beat: $(VENV)/.installed
	mkdir -p var && $(VENV)/bin/celery -A gateway beat -l info --schedule var/celerybeat-schedule

# The suite waits on its deployments far more than it computes (load ~0.7 on two cores):
# TEST_WORKERS processes (pytest-xdist, a test module's tests on one of them) each bring
# their own deployments (and, with TEST_SERVICES=throwaway, their own PostgreSQL and Redis).
# 1471 tests on two cores: 8 min 49 s on one process, 4 min 47 s on two. TEST_WORKERS=0: one.
TEST_WORKERS ?= 2
test: $(VENV)/.installed
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile $(ARGS)

bench: $(VENV)/.installed
	$(PY) -m bench.run $(ARGS)
	$(PY) -m bench.context
