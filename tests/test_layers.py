"""The import layers of scorer/ (pyproject.toml, [tool.importlinter]): the command line above the services and
the API, above the runs, above calibration and generation, above the backends, above the core modules; no import
circles inside any package; nothing outside scorer/cli imports it. `lint-imports` checks them statically."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_layer_contracts_are_kept():
    assert LINT_IMPORTS.is_file(), f"{LINT_IMPORTS} is missing: install the dev extra (import-linter==2.17)"
    # The checkout's own scorer/ is analysed (not an installed copy), and nothing is cached between runs.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([str(LINT_IMPORTS), "--no-cache", str(ROOT / "pyproject.toml")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"lint-imports found broken layer contracts:\n{done.stdout}\n{done.stderr}"
    kept = re.search(r"Contracts: (\d+) kept, 0 broken\.", done.stdout)
    assert kept and int(kept.group(1)) >= 3, f"the layer contracts were not all read:\n{done.stdout}"
