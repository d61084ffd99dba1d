"""consolidation."""
