VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m tidu_compile.tools.demo

test: $(STAMP)
	$(PY) -m pytest tests -q -n auto

lint: $(STAMP)
	$(VENV)/bin/ruff check tidu_compile dialects passes tools tests
	$(VENV)/bin/mypy tidu_compile dialects passes tools

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
