"""Entry point of the ``kmerflow`` command (``python -m kmerflow`` too)."""

import sys

from kmerflow._core import cli_main


def main() -> None:
    """Run the kmerflow command line and exit with its status."""
    sys.exit(cli_main(["kmerflow", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
