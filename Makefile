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

.PHONY: demo test unit lint template layer bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# aws-sam-cli and checkov pin many libraries of their own, so they live in a venv of their own.
$(TOOLBIN)/.installed:
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLBIN)/pip install --quiet --upgrade pip
	$(TOOLBIN)/pip install --quiet 'aws-sam-cli>=1.140' 'checkov>=3.2'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/shareplane demo

test: lint template $(CHROMIUM)
	$(BIN)/pytest -n 2 -q

# tests/browser opens the HTML reports in Debian's Chromium (playwright never downloads a browser).
$(CHROMIUM):
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# mypy --strict over the core layer ([tool.mypy] in pyproject.toml), with the boto3 service stubs.
lint: $(BIN)/.installed
	$(BIN)/ruff check layers functions sim cli tests
	$(BIN)/mypy

unit: $(BIN)/.installed
	$(BIN)/pytest -q -m "not local"

template: $(BIN)/.installed $(TOOLBIN)/.installed
	$(TOOLBIN)/sam validate --lint --template template.yaml
	$(BIN)/cfn-lint template.yaml
	$(TOOLBIN)/checkov --quiet --compact --skip-download --framework cloudformation -f template.yaml
	$(TOOLBIN)/sam build --template template.yaml --build-dir .aws-sam/build

# The cold-start benchmark measures the CoreLayer as sam builds it (boto3 and bytecode included).
layer: $(BIN)/.installed $(TOOLBIN)/.installed
	$(TOOLBIN)/sam build CoreLayer --template template.yaml --build-dir .aws-sam/build

bench: $(BIN)/.installed layer
	$(BIN)/pytest -q -m bench tests/bench -p no:xdist -s

clean:
	rm -rf $(VENV) $(TOOLS) .aws-sam
