# imdb-classifier: `make help` lists the targets. `make train` and `make test` set themselves up.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= configs/train.yaml

# Use the prepared IMDB copy beside the checkout when there is one (no download needed).
ifneq ($(wildcard ../shared/tensorflow_datasets),)
export TFDS_DATA_DIR ?= $(abspath ../shared/tensorflow_datasets)
endif

.PHONY: help install install-gpu train sst5 sst2 pretrain test check lint format sweep server server-stop ui predict bench clean

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# The GPU build of TensorFlow (Linux, NVIDIA driver): `make install-gpu` swaps it in for
# tensorflow-cpu (which never uses a GPU) and leaves $(GPU_STAMP), so reinstalls keep it.
GPU_STAMP := $(VENV)/.gpu
TF_GPU := tensorflow[and-cuda]>=2.20,<2.22
SWAP_GPU = $(BIN)/pip uninstall --quiet -y tensorflow-cpu && $(BIN)/pip install --quiet '$(TF_GPU)'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --quiet --upgrade pip  # -qq: errors only (no build-backend or index notes)
	$(BIN)/pip install --quiet --quiet -e '.[dev]'
	if [ -f $(GPU_STAMP) ]; then $(SWAP_GPU); fi
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install the package with its dev tools
	@echo "installed: $(BIN)/classify"
	@echo "make does not put it on PATH: run 'source $(BIN)/activate' (then 'classify --help'), or call $(BIN)/classify"

install-gpu: $(STAMP) ## Swap in GPU TensorFlow (Linux + NVIDIA driver); training then runs on the GPU
	$(SWAP_GPU)
	touch $(GPU_STAMP)
	@$(BIN)/python -c "import tensorflow as tf; n = len(tf.config.list_physical_devices('GPU')); print(f'TensorFlow {tf.__version__} sees {n} GPU(s)')"

train: $(STAMP) ## Train the best model by validation on the full IMDB data (CONFIG=configs/train.yaml: nbow)
	$(BIN)/classify train --config $(CONFIG)

sst5: $(STAMP) ## Train SST-5's recipe (configs/sst5.yaml: the treebank's phrases, five classes)
	$(BIN)/classify train --config configs/sst5.yaml

sst2: $(STAMP) ## Train SST-2's recipe (configs/sst2.yaml: the treebank's phrases, two classes)
	$(BIN)/classify train --config configs/sst2.yaml

PRETRAIN_CONFIG ?= configs/pretrain.yaml

pretrain: $(STAMP) ## Pretrain the encoder on the unlabelled reviews (PRETRAIN_CONFIG=configs/pretrain.yaml)
	$(BIN)/classify pretrain --config $(PRETRAIN_CONFIG)

# One test worker per core and one more, at most 4 (each holds its own TensorFlow, about 1 GB):
# the tests wait on servers and subprocesses, and the extra worker fills those waits.
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); n=$$((n + 1)); echo $$(( n < 4 ? n : 4 )))

test: $(STAMP) ## Run the tests, real-data tests included, a worker per core and one more, up to 4 (TEST_JOBS=0: none)
	scripts/test_setup.sh
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

# The edit loop's tier: no training, no process started (classify commands, servers, browser),
# no full data and nothing marked slow; such tests skip themselves (tests/conftest.py).
check: $(STAMP) ## Run the quick tests for the edit loop (about a minute; make test runs them all)
	CLASSIFY_TESTS=check $(BIN)/python -m pytest -n 2 --dist loadfile -m "not large and not slow" -q

lint: $(STAMP) ## Check lint and formatting with ruff
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP) ## Format the code with ruff
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

SPEC ?= configs/sweeps/variants.yaml
PORT ?= 5000
# STORE: the SQLite store `make ui` shows (its artifacts: mlruns/ beside it).
STORE ?= mlflow.db

# STORAGE: the Optuna storage that workers on several machines share (make server prints it).
# THREADS: TensorFlow threads of this worker (several workers on one machine: cores / workers).
sweep: $(STAMP) ## Work on a sweep until no point is left (SPEC=configs/sweeps/quick.yaml, STORAGE=postgresql://..., THREADS=1)
	$(BIN)/classify sweep $(SPEC) $(if $(STORAGE),--storage '$(STORAGE)') $(if $(THREADS),--threads $(THREADS))

# LISTEN=0.0.0.0 (or an address of this machine) opens both servers to other machines, with TLS.
# WORKERS=N: the MLflow server's worker processes (MLflow's default, 4).
server: $(STAMP) ## Start PostgreSQL and an MLflow server on it, with passwords, for sweeps on many machines (LISTEN=0.0.0.0: open, TLS)
	PORT=$(PORT) LISTEN=$(LISTEN) $(if $(WORKERS),WORKERS=$(WORKERS)) scripts/server.sh start

server-stop: ## Stop what make server started
	scripts/server.sh stop

ui: $(STAMP) ## Start the MLflow UI on mlflow.db, bound to 127.0.0.1 (PORT=5000, STORE=mlflow.db)
	@echo "MLflow UI: $$($(BIN)/python scripts/ui_url.py $(PORT) $(STORE))  (store: $(abspath $(STORE)); Ctrl-C stops it)"
	@# One worker, no access log, no deprecation warning from mlflow's own imports: only errors.
	@MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false MLFLOW_LOGGING_LEVEL=WARNING \
		PYTHONWARNINGS="ignore:starlette.middleware.wsgi is deprecated" \
		$(BIN)/mlflow ui --backend-store-uri sqlite:///$(abspath $(STORE)) \
		--registry-store-uri sqlite:///$(abspath $(STORE)) \
		--default-artifact-root $(abspath $(dir $(STORE))mlruns) --host 127.0.0.1 --port $(PORT) \
		--workers 1 --uvicorn-opts "--log-level warning"

predict: $(STAMP) ## Classify FILE with the newest registered model (make predict FILE=review.txt)
	@if [ -z "$(FILE)" ]; then echo "usage: make predict FILE=path [FILE='a.txt b.txt']" >&2; exit 2; fi
	$(BIN)/classify predict $(FILE)

# Every script in benchmarks/ (machine.py is their helper); one-off probes live in experiments/.
BENCHMARKS := attention_kernels train_throughput predict_throughput explain_startup baseline_sklearn \
	allocator data_scale sst5_baselines fasttext_vs_nbow sweep_throughput sweep_load run_fixed_cost \
	suite_cpu serve_load
BENCH_OUT = benchmarks/results$(if $(QUICK),-quick).md
# What the benchmarks compare with (sst5_baselines.py, fasttext_vs_nbow.py): never a dependency
# of classify.
BENCH_ONLY := fasttext-wheel

bench: $(STAMP) ## Run the benchmarks, tables into benchmarks/results.md (QUICK=1: minutes)
	$(BIN)/pip install --quiet $(BENCH_ONLY)
	@set -o pipefail; for name in $(BENCHMARKS); do \
		$(BIN)/python benchmarks/$$name.py $(if $(QUICK),--quick) || exit 1; echo; \
	done | tee $(BENCH_OUT)
	@echo "tables written to $(BENCH_OUT)"

clean: ## Remove the virtual environment and caches (keeps mlflow.db and mlruns/)
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
