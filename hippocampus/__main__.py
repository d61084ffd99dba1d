"""`python -m hippocampus ...`: the command line (how `connect()` starts a service)."""

from .cli.app import main

main()
