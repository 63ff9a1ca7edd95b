# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
TOOLS := .venv-tools
BIN := $(VENV)/bin
TOOLBIN := $(TOOLS)/bin
CHROMIUM := /usr/bin/chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
# sam build needs the template's runtime (python3.12) on PATH; pyenv keeps it beside the default,
# but its shim only answers for the active version, so put the newest 3.12 install on PATH directly.
PY312_BIN := $(lastword $(sort $(wildcard $(HOME)/.pyenv/versions/3.12*/bin)))
export PATH := $(CURDIR)/$(BIN)$(if $(PY312_BIN),:$(PY312_BIN)):$(HOME)/.pyenv/shims:$(PATH)
export AWS_DEFAULT_REGION ?= us-east-1
export SAM_CLI_TELEMETRY ?= 0
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

# What the demo needs (the package and its local stack) and what the checks need (the dev extra),
# each with a stamp of its own: `make demo` never waits for mypy, the SageMaker SDK or playwright.
DEMO_INSTALLED := $(VENV)/.demo-installed
DEV_INSTALLED := $(VENV)/.dev-installed
TOOLS_INSTALLED := $(TOOLS)/.installed
# pip install $(2) with $(1)'s pip, saying what it fetches and installs as it goes; its other chatter
# (and a machine's index warnings) go to $(1)/../pip.log, whose end is shown when the install fails.
pip_install = $(1)/pip install --progress-bar off $(2) 2>&1 | tee $(1)/../pip.log \
  | { grep --line-buffered -E '^(Collecting|Successfully installed)' || true; } \
  || { tail -n 40 $(1)/../pip.log; exit 1; }
# sam build runs again only when what it packages changed.
BUILT := .aws-sam/build/template.yaml
PACKAGED := template.yaml $(shell find layers/core functions -type f -not -path '*/__pycache__/*' 2>/dev/null)
QUOTA_PREVIEW := .aws-sam/quota-mode.template.yaml

.PHONY: demo test checks lint template docs pytest thorough unit layer bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(DEMO_INSTALLED): pyproject.toml | $(BIN)/python
	@echo "Installing shareplane and its local stack (boto3, Powertools, pydantic, typer, plotly, moto," \
	  "aws-sam-translator) into $(VENV): a minute or two the first time"
	$(call pip_install,$(BIN),-e '.[local]')
	@touch $@

$(DEV_INSTALLED): pyproject.toml | $(BIN)/python
	@echo "Installing shareplane with its dev tools (pytest, hypothesis, mypy, ruff, cfn-lint, playwright," \
	  "the SageMaker SDK, policy-sentry, moto) into $(VENV): several minutes the first time"
	$(call pip_install,$(BIN),-e '.[dev]')
	@touch $@ $(DEMO_INSTALLED)

# aws-sam-cli and checkov pin many libraries of their own, so they live in a venv of their own.
$(TOOLS_INSTALLED):
	@echo "Installing aws-sam-cli and checkov into $(TOOLS)"
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLBIN)/pip install --quiet --upgrade pip
	$(call pip_install,$(TOOLBIN),'aws-sam-cli>=1.140' 'checkov>=3.2')
	@touch $@

demo: $(DEMO_INSTALLED)
	$(BIN)/shareplane demo

# The installs come first and are not counted; then every check, timed as a whole.
test: $(DEV_INSTALLED) $(TOOLS_INSTALLED) $(CHROMIUM)
	@start=$$(date +%s); status=0; $(MAKE) --no-print-directory checks || status=$$?; \
	echo "make test: $$(( $$(date +%s) - start )) s of wall time (installs not counted)"; exit $$status

checks: lint template docs pytest

# The manual: its reference pages must be what the code generates now, and a strict build fails on a
# broken link, a missing anchor or a page left out of the navigation. The site goes to site/.
docs: $(DEV_INSTALLED)
	$(BIN)/python -m shareplane_cli.reference --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The 15 slowest tests are printed in every run, so a test that grows shows where the time went.
pytest: $(DEV_INSTALLED) $(CHROMIUM)
	$(BIN)/pytest -n 2 --dist loadgroup --durations=15 -q

# tests/browser opens the HTML reports in Debian's Chromium (playwright never downloads a browser).
$(CHROMIUM):
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# mypy --strict over the core layer, the CLI and gpusim ([tool.mypy] in pyproject.toml); then
# the import contracts ([tool.importlinter]): its graph takes under a second, so no cache is kept.
lint: $(DEV_INSTALLED)
	$(BIN)/ruff check layers functions sim cli tests
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# `sam validate` checks the SAM transform; cfn-lint then checks the template and its quota-mode
# rendering in one run; sam build runs when what it packages changed.
template: $(DEV_INSTALLED) $(TOOLS_INSTALLED) $(QUOTA_PREVIEW) $(BUILT)
	$(TOOLBIN)/sam validate --template template.yaml
	$(BIN)/cfn-lint template.yaml $(QUOTA_PREVIEW)
	$(TOOLBIN)/checkov --quiet --compact --skip-download --framework cloudformation -f template.yaml

$(QUOTA_PREVIEW): template.yaml config/shares.yaml $(DEV_INSTALLED)
	$(BIN)/shareplane config render --mode quota --output $@

$(BUILT): $(PACKAGED) $(TOOLS_INSTALLED)
	$(TOOLBIN)/sam build --template template.yaml --build-dir .aws-sam/build

unit: $(DEV_INSTALLED)
	$(BIN)/pytest -q -m "not local"

# The cold-start benchmark measures the CoreLayer as sam builds it (boto3 and bytecode included).
layer: $(DEV_INSTALLED) $(TOOLS_INSTALLED)
	$(TOOLBIN)/sam build CoreLayer --template template.yaml --build-dir .aws-sam/build

# Every property at the sizes it was written with (tests/conftest.py's `thorough` profile).
thorough: $(DEV_INSTALLED)
	HYPOTHESIS_PROFILE=thorough $(BIN)/pytest -n 2 -q -m "not local and not bench" tests/unit tests/integration tests/sim

bench: $(DEV_INSTALLED) layer thorough
	$(BIN)/pytest -q -m bench tests/bench -p no:xdist -s

clean:
	rm -rf $(VENV) $(TOOLS) .aws-sam site
