"""Progress bars on stderr (rate and ETA); results never go to the terminal's stdout stream by accident."""

from __future__ import annotations

import sys
from typing import Any


def bar(total: int, desc: str, initial: int = 0, unit: str = "dec") -> Any:
    """A tqdm bar on stderr with rate and ETA."""
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
                smoothing=0.1)
