"""The one exception type for errors a user can cause.

The CLI prints it as a single line on stderr and exits with code 2; anything else is a bug
and keeps its traceback.
"""


class SynthError(Exception):
    """Bad input, impossible parameters, unknown names, unreadable files, solver limits."""
