"""Names and defaults the command line needs before anything heavy is imported (the CLI's start-up
reads them to build its options; the modules that use them import them from here)."""

ENV_SERVER = "HIPPOCAMPUS_SERVER"  # the service a Client (and the CLI's --server) talks to
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
DEFAULT_CRON = "0 3 * * *"  # consolidation: 03:00 every day
DEFAULT_GRACE_S = 3600  # a missed scheduled run may still start this late
# `serve` waits this long for a store another process holds (a CLI command, cron's consolidate) before it
# gives up; a command that finds a service starting for its store waits for it somewhat longer (issue 57).
STORE_WAIT_S = 60.0
INJECT_MAX_ITEMS = 20  # the prompt block (Memory.context): at most this many memories,
INJECT_MIN_SCORE = 0.5  # each scoring at least this (lifecycle/policy.py THRESHOLDS reads both)
SERVICE_START_WAIT_S = STORE_WAIT_S + 30.0
