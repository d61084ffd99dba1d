"""Prompt templates, one YAML file per processor (loaded with importlib.resources)."""
