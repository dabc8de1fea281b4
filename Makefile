# s3sweep: the two commands a new user needs are `make demo` and `make test`.
CARGO ?= cargo

.PHONY: demo test lint fmt build-release

## The main job: the local sweep on the embedded S3 server (about a minute); also
## redraws docs/demo.svg and rewrites docs/demo.json.
demo:
	$(CARGO) run --release --bin s3sweep -- local --plot docs/demo.svg --json docs/demo.json

## Every test: formatting, lints, unit, integration and CLI tests.
test: lint
	$(CARGO) test --all-targets

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

build-release:
	$(CARGO) build --release
