"""Entry point of the ``kmerflow`` command (``python -m kmerflow`` too)."""

import signal
import sys

from kmerflow._core import cli_main


def main() -> None:
    """Run the kmerflow command line and exit with its status.

    The command line handles SIGINT and SIGTERM itself (the run is cancelled, its temporary
    files removed, exit 130 or 143). Python's own SIGINT handler is set back to the default
    first: it would otherwise also be called and raise ``KeyboardInterrupt`` after the run.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(cli_main(["kmerflow", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
