"""Moving memories out and in: MEMORY.md (memory_md.py), a view a person edits, and JSONL (jsonl.py),
a backup with every field and the history; the service (service.py) the facade delegates to."""
