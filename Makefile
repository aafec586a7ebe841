# One entry point for newcomers and CI: `make demo`, `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
LINKED := $(VENV)/.linked
# The strict editable install links each module file under stategate/ (see pyproject.toml's
# [tool.mypy]): a module added or removed since needs its links made again.
PACKAGE_DIRS := analyzer analyzer/rules spark_jobs provider $(filter-out %/__pycache__/,$(wildcard provider/*/))

export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
# spark-submit (from the pyspark package) must be on PATH for Airflow's SparkSubmitOperator.
export PATH := $(abspath $(VENV)/bin):$(PATH)

.PHONY: demo test docs bench reliability nexmark check-java clean

$(STAMP): pyproject.toml constraints.txt | check-java
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]' --config-settings editable_mode=strict
	touch $(STAMP)

$(LINKED): $(STAMP) $(PACKAGE_DIRS)
	$(PY) -m pip install --quiet --no-deps -e . --config-settings editable_mode=strict
	touch $(LINKED)

check-java:
	@command -v java >/dev/null 2>&1 || { echo "ERROR: Java not found. Spark 4 needs Java 17 or newer on PATH (e.g. apt-get install openjdk-17-jre-headless)." >&2; exit 1; }
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then echo "ERROR: Java $$v found; Spark 4 needs Java 17 or newer." >&2; exit 1; fi

demo: $(LINKED)
	$(PY) -m dags.demo

test: $(LINKED)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(MAKE) docs
	$(PY) -m pytest -q

# --strict: a broken link, a page missing from the navigation or an undocumented operator keyword fails.
docs: $(LINKED)
	cd docs && $(abspath $(VENV))/bin/mkdocs build --strict --quiet

bench: $(LINKED)
	$(PY) benchmarks/analyzer_bench.py
	$(PY) benchmarks/window_bench.py

reliability: $(LINKED)
	$(PY) benchmarks/analyzer_fuzz.py
	$(PY) benchmarks/crash_soak.py
	$(PY) benchmarks/redeploy_fuzz.py

nexmark: $(LINKED)
	$(PY) -m tests.nexmark

clean:
	rm -rf $(VENV) .pytest_cache
