"""Use cases the commands run: one module each (DESIGN.md, app/)."""
