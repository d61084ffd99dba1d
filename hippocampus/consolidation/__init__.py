"""Offline consolidation: `PHASES` in service.py, one visible list (the job's episodic phases in
job.py and distill.py, then supersede, compress, decay and graph), the hard pair rules (rules.py)
and the cron schedule (schedule.py)."""
