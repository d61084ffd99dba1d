"""Offline consolidation: `PHASES` in service.py, one visible list (the job's episodic phases, run by
job.py: merges.py, pending.py, distill.py, pairs.py; then supersede, compress, decay and graph), the hard pair rules (rules.py)
and the cron schedule (schedule.py)."""
