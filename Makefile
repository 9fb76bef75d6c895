# Two commands on a fresh machine: `make demo` and `make test`. Each sets up .venv/ first.
# Java 17+ is the one prerequisite; `setup` checks it and says what to install.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SPARK_STAMP := $(VENV)/.spark-installed
COMPILED := $(VENV)/.compiled
OUT ?= out
PYTEST_ARGS ?=

.PHONY: setup setup-jvm class-archive java-check demo book wheel test test-extended test-load test-unit test-spark test-notebooks bench lab golden clean lock connect-server

setup: java-check $(STAMP) $(COMPILED)

java-check:
	@$(PYTHON) lib/state_runbooks/common/environment.py

# Reinstalled when the dependencies, their pins or the kernel configuration change; otherwise
# setup is a no-op. Spark and what its Python workers import come first, on their own: the tests'
# class archive needs nothing else, so make test records it while the rest installs.
$(SPARK_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv --without-pip $(VENV)
	@# pip from this Python's own pip (3 s), else from the copy Python bundles (12 s: it compiles)
	$(PYTHON) -m pip --python $(BIN)/python install --quiet --no-compile "pip>=24" 2>/dev/null \
	  || { $(BIN)/python -m ensurepip && $(BIN)/python -m pip install --quiet --upgrade "pip>=24"; }
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt pyspark pandas pyarrow
	@touch $(SPARK_STAMP)

$(STAMP): $(SPARK_STAMP) pyproject.toml constraints.txt lib/state_runbooks/resources/ipython_kernel_config.py
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt -e ".[dev]"
	$(BIN)/state-runbooks install-kernel-config
	@touch $(STAMP)

# The installed modules (not their own tests) compiled to bytecode once, on both cores: every
# kernel, worker and helper process then reads it, even where PYTHONDONTWRITEBYTECODE stops Python
# from writing its own (importing pyspark and pandas: 1.2 s instead of 4 s, in each of the 200 or
# so Python processes a test run starts: kernels, Spark's Python workers, helpers).
$(COMPILED): $(STAMP)
	$(BIN)/python -m compileall -q -j 0 -x '/tests?/' $(VENV)/lib > /dev/null
	@touch $(COMPILED)

# The class archive for Spark's JVMs (lib/state_runbooks/dev/class_archive.py), recorded once
# per environment as soon as Spark is installed (from the library's source: the package installs
# meanwhile): its recording leaves a core idle, so the rest of the installation and the bytecode
# compilation run beside it. make demo and make test map Spark's classes from it.
class-archive: $(SPARK_STAMP)
	@PYTHONPATH=lib $(BIN)/python tests/jvm_class_archive.py

# setup, and the class archive beside it
setup-jvm: java-check $(SPARK_STAMP)
	@$(MAKE) --no-print-directory -j2 $(COMPILED) class-archive

# A line per runbook, then a table of outputs; Spark's and the kernels' output in $(OUT)/logs/.
# Two runbooks at a time on two cores or more (state-runbooks demo -j).
demo: setup-jvm
	@$(BIN)/state-runbooks demo --out $(OUT)

# The course book: every demo run again and rendered as a page, with an index in the order of the
# learning path (runbooks/course.yaml): $(OUT)/book/index.html.
book: setup-jvm
	@$(BIN)/state-runbooks book --out $(OUT)/book

# A wheel in dist/ that carries the notebooks, playbooks and schedules (README: install from a wheel).
wheel: setup
	$(BIN)/python -m pip wheel --quiet --no-deps -w dist .

# Every behaviour once, every tier (tests/tiers.py); its aim is 20 minutes on two cores.
test: setup-jvm
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The rest of each matrix: the same checks on more shapes, providers, faults and damages, and every
# runbook's demo over Spark Connect (tests/tiers.py). CI runs it after make test.
test-extended: setup-jvm
	$(BIN)/python -m pytest -m extended $(PYTEST_ARGS)

# make demo and make book on a busy machine: each beside two CPU-bound processes the test starts
# and stops; every runbook must end with its usual status, every lesson be a page (tests/load).
test-load: setup-jvm
	$(BIN)/python -m pytest -m load -n 0 tests/load $(PYTEST_ARGS)

# The tiers, each on its own: the library without Spark (seconds), the library on real Spark (local,
# a Spark Connect server and a standalone cluster), and the notebooks run whole (nbval, papermill).
test-unit: setup
	$(BIN)/python -m pytest tests/unit -n 0 $(PYTEST_ARGS)

test-spark: setup-jvm
	$(BIN)/python -m pytest tests/spark $(PYTEST_ARGS)

test-notebooks: setup-jvm
	$(BIN)/python -m pytest tests/notebooks notebooks $(PYTEST_ARGS)

bench: setup
	$(BIN)/python tests/benchmarks/run.py

lab: setup
	$(BIN)/jupyter lab notebooks/

# A local Spark Connect server on 127.0.0.1:15002 for trying the runbooks as on Databricks serverless:
# then run one with -p spark_master sc://127.0.0.1:15002. Ctrl-C stops it.
connect-server: setup
	$(BIN)/state-runbooks connect-server --port 15002

# After changing a notebook or what it prints: refresh the outputs nbval compares.
golden: setup
	$(BIN)/state-runbooks golden

# Re-pin the tested versions after changing dependencies in pyproject.toml.
lock: setup
	$(BIN)/python -m pip freeze --exclude-editable --exclude spark-state-runbooks > constraints.txt

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
