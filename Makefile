# The two set-up commands of the README: `make demo` (main job) and `make test` (whole test suite);
# `make test-fast` runs the unit tests only (no model load, no browser, no fuzz suite) in under a minute.
.PHONY: demo test test-fast install

install:
	scripts/install.sh

demo:
	scripts/install.sh
	scripts/main-job.sh

test:
	scripts/install.sh --browser
	.venv/bin/ruff check scorer tests build.py benchmarks examples
	.venv/bin/lint-imports
	.venv/bin/mypy
	.venv/bin/python -m pytest -q

test-fast:
	.venv/bin/python -m pytest -q -m "not slow and not fuzz" -n 2 -p no:cacheprovider
