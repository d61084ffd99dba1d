"""How memories age: the policy table (policy.py), the degraded category guess (categories.py),
the decay step (decay.py) and the prompt block (prompt_block.py)."""
