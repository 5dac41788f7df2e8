"""``python -m ingestaudit``: the same command line as the ``ingestaudit`` console script."""

from ingestaudit.cli import main

if __name__ == "__main__":
    main()
