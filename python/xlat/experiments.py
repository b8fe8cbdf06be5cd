"""Sweeps, the results store and studies (`xlat sweep`, `xlat results`, `xlat study`).

Placeholder so the CLI can reserve these subcommands; the experiments work replaces it.
"""


def register(subparsers):
    """Add the experiment subcommands to the `xlat` argument parser."""
