"""Faces that speak another memory library's API over hippocampus.Memory: translation only, no second
implementation. `hippocampus.compat.mem0.Memory` takes mem0 v3's call shapes and answers mem0's dicts
(docs/mem0.md)."""
