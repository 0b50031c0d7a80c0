"""``python -m toolrig``: the same as the ``toolrig`` command."""

from __future__ import annotations

from toolrig.cli import main

if __name__ == "__main__":
    main()
