# Two entry points (see README): `make run` and `make test`. Both create the venv if missing.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

.PHONY: install run test lit bench
install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/hlo-opt examples/mlp.hlo --emit=mlir
	$(VENV)/bin/hlo-run examples/mlp.hlo --random-inputs --seed 0 --print

lit: $(STAMP)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/lit -sv test

test: $(STAMP)
	$(VENV)/bin/pytest -q -n auto
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/lit -s test

bench: $(STAMP)
	$(PY) bench/parse_bench.py
	$(PY) bench/jit_bench.py
	$(PY) bench/model_bench.py
