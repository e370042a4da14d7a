# The two set-up commands of the README: `make demo` (main job) and `make test` (whole test suite).
.PHONY: demo test install

install:
	scripts/install.sh

demo:
	scripts/install.sh
	scripts/main-job.sh

test:
	scripts/install.sh --browser
	.venv/bin/ruff check scorer tests build.py
	.venv/bin/lint-imports
	.venv/bin/python -m pytest -q
