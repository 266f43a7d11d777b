# ssq: common tasks. `make test` is what CI runs (see .ci/run).

VENV := .venv
PYTHON_DEPS := $(VENV)/.installed

.PHONY: build run test test-rust test-python bench cluster cluster-stop docker fmt lint clean

build:
	cargo build --release

run:
	cargo run --release

test: lint test-rust test-python

test-rust:
	cargo test

# Python clients (boto3, the AWS CLI) against the debug binary `cargo test` built.
test-python: $(PYTHON_DEPS)
	cargo build
	SSQ_BIN=target/debug/ssq $(VENV)/bin/pytest -q tests/python

$(PYTHON_DEPS): tests/python/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tests/python/requirements.txt
	touch $@

# Side-by-side figures (HTTP floor, memory-only, Redis-backed, moto) into docs/benchmarks.md.
bench:
	bash bench/run.sh

# Redis, three ssq instances and HAProxy on loopback (docker/compose.yaml without Docker).
cluster:
	bash scripts/cluster.sh start

cluster-stop:
	bash scripts/cluster.sh stop

# Needs a Docker engine.
docker:
	docker build -f docker/Dockerfile -t ssq .

fmt:
	cargo fmt

# Checks every target, benches and the load generator included, so none rots.
lint:
	cargo clippy --workspace --all-targets -- -D warnings

clean:
	cargo clean
	rm -rf $(VENV) .venv-bench
