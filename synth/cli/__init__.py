"""synth's command line (synth.cli.main): one module per subcommand over the use cases of synth.app."""

from synth.cli.main import build_parser, main, version

__all__ = ["build_parser", "main", "version"]
