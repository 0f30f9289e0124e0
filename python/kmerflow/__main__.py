"""Entry point of the ``kmerflow`` command (``python -m kmerflow`` too).

``kmerflow pipeline ...`` runs in Python (on Dask); every other command is the native command
line.
"""

import sys


def main() -> None:
    """Run the kmerflow command line and exit with its status."""
    if sys.argv[1:2] == ["pipeline"]:
        from kmerflow.pipeline.cli import main as pipeline_main

        sys.exit(pipeline_main(sys.argv[2:]))
    from kmerflow._core import cli_main

    sys.exit(cli_main(["kmerflow", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
