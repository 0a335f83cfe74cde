"""Analytical cost reports: routings of all-to-all exchanges next to lower bounds and models."""
