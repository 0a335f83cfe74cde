# The two set-up commands of the README: `make demo` and `make test`.
# Both install what they need into the current Python (root on a fresh machine needs no virtualenv).
PYTHON ?= python3
PIP = PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore $(PYTHON) -m pip install -q

.PHONY: install install-test demo test bench

install:
	$(PIP) -e .

install-test:
	$(PIP) -e '.[test]'

# The main job on a bundled instance: route every OPT phase of the 512-leaf Table 3.1 XGFT,
# write the routes file and re-verify it independently.
demo: install
	$(PYTHON) -m synth route instances/table3.1/xgft512.toml --out out/xgft512-dmodk.json
	$(PYTHON) -m synth check out/xgft512-dmodk.json

test: install-test
	$(PYTHON) -m pytest -q

bench: install
	$(PYTHON) tests/bench/bench_loads.py
