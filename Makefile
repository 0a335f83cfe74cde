# The two set-up commands of the README: `make demo` and `make test`.
# Both install what they need into the current Python (root on a fresh machine needs no virtualenv).
PYTHON ?= python3
PIP = PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore $(PYTHON) -m pip install -q

.PHONY: install simgrid install-test demo test test-slow bench report reports-direct docs

install:
	scripts/install-system-packages.sh
	$(PIP) -e .

# SimGrid 4.1 for `synth simulate` (about 10 minutes the first time, seconds after; Debian's 3.32, which
# `install` puts in place, is the fallback): scripts/install-simgrid.sh says why
simgrid: install
	PYTHON=$(PYTHON) scripts/install-simgrid.sh

install-test: install simgrid
	$(PIP) -e '.[test,cluster]'

# The main job on a bundled instance: synthesize contention-optimal routes for every OPT phase of
# the 256-leaf Table 3.1 XGFT, write the routes file and re-verify it independently.
demo: install
	mkdir -p out  # synth makes no parent directory for --out (all or nothing: issue 41)
	$(PYTHON) -m synth route instances/table3.1/xgft256.toml --router layered --out out/xgft256-layered.json
	$(PYTHON) -m synth check out/xgft256-layered.json

test: install-test
	$(PYTHON) -m pytest -q --durations=30

# The documentation site (mkdocs.yml): tutorials, the API reference from the docstrings, the CLI reference from
# the parser, the formats; into site/, any warning an error.
docs: install
	$(PIP) -e '.[docs]'
	$(PYTHON) -m mkdocs build --strict --quiet

bench: install
	$(PYTHON) tests/bench/bench_loads.py

# Whole exchanges (every OPT phase up to 512 leaves, samples up to 8192): minutes, run by CI.
test-slow: install-test
	$(PYTHON) -m pytest -q --durations=30 tests/slow

# The committed cost report of the 512-leaf Table 3.1 XGFT (reports/): five exchanges, synth's four
# routings and four of OpenSM's engines on ibsim. About 16 minutes on 2 cores.
report: install
	$(PYTHON) -m synth report instances/table3.1/xgft512.toml --opensm minhop,updn,ftree,dfsssp \
		--out reports/table3.1-xgft512.html --out reports/table3.1-xgft512.md

# Issue 11's reports of direct networks: the Table 4.2 balanced dragonflies, a Slim Fly and a 2D HyperX.
# The larger two give paths and layered 1 s of solver time per phase (whole exchanges of 342 and 588
# phases; with the default 20 s the hardest phases make a run take hours): their statuses say where a
# phase stayed above its bound unproven.
reports-direct: install
	$(PYTHON) -m synth report dragonfly:2,4,2 --opensm minhop,updn,dfsssp,nue,lash \
		--out reports/dragonfly-2-4-2.html --out reports/dragonfly-2-4-2.md
	$(PYTHON) -m synth report dragonfly:3,6,3 --opensm minhop,updn,dfsssp,nue,lash --time-limit 1 \
		--out reports/dragonfly-3-6-3.html --out reports/dragonfly-3-6-3.md
	$(PYTHON) -m synth report slimfly:7 --opensm minhop,updn,dfsssp,nue,lash --time-limit 1 \
		--out reports/slimfly-7.html --out reports/slimfly-7.md
	$(PYTHON) -m synth report hyperx:5,5:p=4 --opensm minhop,updn,dfsssp,nue,lash,dor \
		--out reports/hyperx-5x5.html --out reports/hyperx-5x5.md
