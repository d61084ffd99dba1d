"""The one list of public verbs (hippocampus/contract/verbs.py) as a table: per verb its arguments and result,
read from Memory's signature, whether it writes, its errors, and its name on each face (or why a face leaves it out).

    python scripts/verbs.py
"""

from __future__ import annotations

import hippocampus.memory  # noqa: F401  (the facade registers the class whose signatures the table reads)
from hippocampus.contract.verbs import table


def main() -> int:
    print(table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
