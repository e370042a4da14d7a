"""The data files the library reads at run time, shipped inside the package (``scorer/data/``): the presets and their
calibration files, the demonstrations they show, the versus inputs, the quantization calibration text. Read through
:mod:`importlib.resources`, so an installed wheel finds them wherever it lives, not only a checkout. (The JSON
Schemas live with the formats, :mod:`scorer.formats.json_schemas`; the site's templates and scripts with the site,
``scorer/site/assets``.)"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_path(*parts: str) -> Path:
    """A file or folder under ``scorer/data`` as a path (wheels install unzipped, so the package is on disk)."""
    return Path(str(resources.files("scorer").joinpath("data", *parts)))


def package_path(package: str, *parts: str) -> Path:
    """A file or folder inside the installed package ``package`` (``scorer.site``: its ``assets``)."""
    return Path(str(resources.files(package).joinpath(*parts)))
