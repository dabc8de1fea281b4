# s3sweep: the two commands a new user needs are `make demo` and `make test`.
CARGO ?= cargo

.PHONY: demo test lint fmt build-release bench bench-engine

## The main job: the local sweep on the embedded S3 server (about a minute).
demo:
	$(CARGO) run --release --bin s3sweep -- local

## Every test: formatting, lints, unit, integration and CLI tests.
test: lint
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
