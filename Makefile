# s3sweep: the two commands a new user needs are `make demo` and `make test`.
CARGO ?= cargo

.PHONY: demo test lint fmt build-release tools build deploy invoke seed-aws

## The main job: the local sweep on the embedded S3 server (about a minute).
demo:
	$(CARGO) run --release --bin s3sweep -- local

## Every test: formatting, lints, template lint, unit, integration and CLI tests,
## and the Lambda function under `cargo lambda watch` (tools from .venv).
test: lint tools
	CARGO_LAMBDA="$(CURDIR)/$(VENV)/bin/cargo-lambda" $(CARGO) test --all-targets

lint: tools
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings
	$(VENV)/bin/cfn-lint template.yaml

fmt:
	$(CARGO) fmt --all

build-release:
	$(CARGO) build --release

## ---- Tools: cargo-lambda (with zig) and cfn-lint, pinned in requirements-dev.txt ----
VENV ?= .venv
PYTHON ?= python3
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
