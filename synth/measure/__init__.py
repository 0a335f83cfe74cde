"""Measurement: channel loads, the cut and LP lower bounds, and the evaluation of a routed phase
against them. Below the routers (which minimize these loads) and the checker (which recomputes them);
above the data types (synth.topology, synth.traffic)."""
