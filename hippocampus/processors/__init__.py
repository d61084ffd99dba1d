"""processors."""
