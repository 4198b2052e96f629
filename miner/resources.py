"""Where templates/ and metadata/ live: the checkout's top-level folders, or the installed package.

A source checkout keeps them beside `miner/` (the design card's layout); `pip install .` maps
them into `miner.templates` and `miner.metadata`. Running from a checkout must not need an install.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path


@functools.cache
def data_dir(name: str) -> Path:
    """`name` is "templates" or "metadata"."""
    checkout = Path(__file__).resolve().parents[1] / name
    if checkout.is_dir():
        return checkout
    return Path(str(resources.files(f"miner.{name}")))
