"""Deterministic demo checkpoints and event logs written by real streaming queries, and the faults
that demos and tests inject into them."""
