"""Collective step schedules: the model (schedule), the symbolic verifier (verify) and the
generators (algorithms, one module each behind ALGORITHMS)."""
