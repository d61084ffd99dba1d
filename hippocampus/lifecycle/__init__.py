"""How memories age: the policy table (policy.py), the degraded category guess (categories.py),
the decay step (decay.py), supersede and compress, bringing a removed row back (restore.py), the
prompt block (prompt_block.py) and the service the facade delegates to (service.py)."""
