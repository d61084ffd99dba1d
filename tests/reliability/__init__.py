"""Reliability and security suite (issue 5): isolation, faults, crashes, concurrency, bad input, prompt safety."""
