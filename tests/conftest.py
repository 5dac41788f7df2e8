"""Shared pytest fixtures: the location of the third-party labelled data in ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("INGESTAUDIT_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ../shared/data; skips the test when the folder is absent (a user's clone has none)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real labelled data not found at {SHARED_DATA} (set INGESTAUDIT_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def shared_dataset(shared_data: Path):
    """``shared_dataset(name)``: the folder ``../shared/data/<name>``; skips the test when it is absent."""

    def get(name: str) -> Path:
        path = shared_data / name
        if not path.is_dir():
            pytest.skip(f"{path} not found")
        return path

    return get



@pytest.fixture(scope="session", autouse=True)
def _no_step_cache():
    """No run of the suite reads or writes the step cache (`ingestaudit.step_cache`) unless its test turns it on
    with its own folder: a test's numbers never depend on which test parsed a document first. Session-scoped and set
    in the environment, so subprocesses and worker processes inherit it."""
    saved = os.environ.get("INGESTAUDIT_STEP_CACHE")
    os.environ["INGESTAUDIT_STEP_CACHE"] = "off"
    yield
    if saved is None:
        os.environ.pop("INGESTAUDIT_STEP_CACHE", None)
    else:
        os.environ["INGESTAUDIT_STEP_CACHE"] = saved


@pytest.fixture(scope="session", autouse=True)
def _no_inherited_terminal_size():
    """Every test sees the same environment whatever runs it: pytest-xdist sets ``COLUMNS``/``LINES`` in its worker
    processes (80 x 24), which would narrow the terminal views under ``-n`` only. Session-scoped, so module-scoped
    fixtures (one demo run per file) see it too; a test that needs a width passes ``COLUMNS`` itself."""
    saved = {k: os.environ.pop(k) for k in ("COLUMNS", "LINES") if k in os.environ}
    yield
    os.environ.update(saved)
