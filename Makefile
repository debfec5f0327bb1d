# Two entry points (see README): `make run` and `make test`. Both create the venv if missing.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

PYTHON ?= python3

# A Python outside requires-python fails here, saying so, instead of in pip's resolver.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(None if (3, 11) <= v <= (3, 13) else f"hlo-mlir needs Python 3.11 to 3.13; $(PYTHON) is {v[0]}.{v[1]}: make PYTHON=python3.12 ...")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

.PHONY: install run test lit bench
install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/hlo-opt examples/mlp.hlo --emit=mlir
	$(VENV)/bin/hlo-run examples/mlp.hlo --random-inputs --seed 0 --print

lit: $(STAMP)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/lit -sv test

# lit runs beside pytest (its report printed after pytest's): each fills the cores the other leaves idle
# (pytest's collection, its last long tests). worksteal hands the long tests of a file to an idle worker.
test: $(STAMP)
	@log=$$(mktemp); \
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/lit -s test >$$log 2>&1 & lit=$$!; \
	$(VENV)/bin/pytest -q -n auto --dist worksteal; pytest_rc=$$?; \
	wait $$lit; lit_rc=$$?; echo "--- lit:"; cat $$log; rm -f $$log; \
	test $$pytest_rc = 0 && test $$lit_rc = 0

bench: $(STAMP)
	$(PY) bench/parse_bench.py
	$(PY) bench/jit_bench.py
	$(PY) bench/model_bench.py
