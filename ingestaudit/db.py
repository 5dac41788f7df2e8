"""Every DuckDB connection the package opens (the run history, the store's sort), opened offline.

DuckDB installs and loads "known" extensions on demand: given a SQLite file it tries to download
``sqlite_scanner`` from extensions.duckdb.org, and an ``https://`` path or a spatial function would do the same.
The tool runs offline (DESIGN.md, "Offline and read-only"), so `connect` turns both off for every connection: an
extension that is not built in is an error naming it, never a download. Parquet, which the store needs, is built in.
"""

from __future__ import annotations

from typing import Any

OFFLINE = {"autoinstall_known_extensions": False, "autoload_known_extensions": False,
           "allow_community_extensions": False}
"""DuckDB settings of every connection: no extension is installed or loaded behind the caller's back (so nothing is
downloaded), and community extensions are refused."""


def connect(database: str = ":memory:", *, read_only: bool = False) -> Any:
    """A ``duckdb.DuckDBPyConnection`` to ``database`` (a file path, or ``":memory:"``) with the `OFFLINE` settings.

    Raises:
        duckdb.Error: as ``duckdb.connect`` (not a DuckDB file, locked by another process, damaged...); a file that
            needs an extension (a SQLite database) fails with DuckDB's "Install it first" message, not a download.
    """
    import duckdb

    return duckdb.connect(database, read_only=read_only, config=dict(OFFLINE))
