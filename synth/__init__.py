"""synth: contention-optimal routing and schedule synthesis for interconnection networks."""

__version__ = "0.1.0"
