"""synth: contention-optimal routing and schedule synthesis for interconnection networks."""

__version__ = "0.1.0"


def _no_hugepage_advice() -> None:
    """numpy asks the kernel for transparent huge pages on every large array; where the kernel then
    compacts memory synchronously (defrag = madvise, as on the development machine) a fresh 0.5 GB
    array costs 1.5 s instead of 0.2 s, which dominated the schedule replays (measured: Swing on the
    64x64 torus, 67 M block sends). Large arrays are touched once or twice here: plain pages win.
    numpy not imported yet reads the choice from its environment variable when it is: importing
    synth imports nothing heavy, so that `python -m synth` has its signal handlers installed before
    the long imports (synth/__main__.py)."""
    import sys

    if "numpy" not in sys.modules:
        import os

        os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
        return
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # another numpy layout: keep its default
        return
    _set_madvise_hugepage(False)


_no_hugepage_advice()
