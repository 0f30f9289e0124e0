"""Entry point of the ``kmerflow`` command (``python -m kmerflow`` too).

``kmerflow pipeline ...`` (and ``kmerflow help pipeline``) runs in Python (on Dask), and so do
the counting commands given ``--scheduler``, ``--local-cluster`` or ``--shards``
(:mod:`kmerflow.distributed.cli`); every other command line is the native one, whose run
report this renders when asked (``--html``, ``--plots``, ``--multiqc``).
"""

import json
import signal
import sys


def main() -> None:
    """Run the kmerflow command line and exit with its status.

    The native command line handles SIGINT and SIGTERM itself while it runs (the run is
    cancelled, its temporary files removed, exit 130 or 143) and puts the process's handlers
    back after. Both are ignored here first: a signal that comes once the run is over (while
    its report renders or the process exits) leaves the run's outcome and exit status as they
    are. ``kmerflow pipeline`` keeps Python's handler (it turns Ctrl-C into exit 130 itself).
    """
    if sys.argv[1:2] == ["pipeline"] or sys.argv[1:3] == ["help", "pipeline"]:
        from kmerflow.pipeline.cli import main as pipeline_main

        sys.exit(_ended(pipeline_main(sys.argv[2:] if sys.argv[1] == "pipeline" else ["--help"])))
    from kmerflow.distributed.cli import wants_shards

    if wants_shards(sys.argv[1:]):
        from kmerflow.distributed.cli import main as sharded_main

        sys.exit(_ended(sharded_main(sys.argv[1:])))
    from kmerflow._core import cli_main

    for handled in (signal.SIGINT, signal.SIGTERM):
        signal.signal(handled, signal.SIG_IGN)
    code, report = cli_main(["kmerflow", *sys.argv[1:]])
    if report is not None:
        code = _render(json.loads(report))
    sys.exit(code)


def _ended(status: int) -> int:
    """``status`` of a run on Dask, whose process ends at once if a signal stopped it
    (:func:`kmerflow.distributed.cluster.end_stopped_process`)."""
    from kmerflow.distributed.cluster import end_stopped_process

    end_stopped_process(status)
    return status


def _render(report: dict) -> int:
    """Render the run report as its command line asked; 1 (after one line on stderr) if that
    fails."""
    from kmerflow.report import render

    try:
        render(report)
    except (OSError, RuntimeError) as e:
        print(f"kmerflow {report['command']}: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    main()
