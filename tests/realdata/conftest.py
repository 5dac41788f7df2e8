"""The imported corpora link their documents (and some labels and outputs) into ../shared/data: the user trusts that
folder, so it is listed in $INGESTAUDIT_LINK_ROOTS (a corpus's links out of itself are otherwise never followed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = Path(os.environ.get("INGESTAUDIT_SHARED_DATA", ROOT.parent / "shared" / "data"))  # as tests/conftest.py


@pytest.fixture(scope="session", autouse=True)
def _trust_links_into_shared_data():
    from ingestaudit.corpus import LINK_ROOTS_ENV

    before = os.environ.get(LINK_ROOTS_ENV)
    roots = [str(SHARED_DATA.resolve()), *([before] if before else [])]
    os.environ[LINK_ROOTS_ENV] = os.pathsep.join(roots)
    yield
    if before is None:
        os.environ.pop(LINK_ROOTS_ENV, None)
    else:
        os.environ[LINK_ROOTS_ENV] = before
