"""What the restart benchmarks share: one job deployed on all but the last bid files, restarted on
them several ways, each in a process of its own, alternating, the best of ``--repeat`` counting.

Each benchmark's child deploys and restarts the job its own way and prints its figures as one JSON
line, ``restart_seconds`` among them (``benchmarks/rescale_bench.py``, ``benchmarks/reseed_bench.py``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Callable

from benchmarks.window_bench import CASES, add_child_arguments, generate, run_child

#: The case whose data the restart benchmarks generate (its bids; their jobs are their own).
CASE = next(c for c in CASES if c.name == "TUMBLE 1 min")
#: Their jobs' window: an hour long over the data's three hours, so every key has an open window at
#: the restart.
TVF = "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '60' MINUTES)"
#: The bid files that arrive after the deploy: the restart reads them.
LATER = 2


def feed(source: Path, work: Path) -> tuple[Path, Callable[[], None]]:
    """The input folder a job deploys on (all bid files but the :data:`LATER` ones, linked), and
    what adds those once it is deployed."""
    files = sorted(source.glob("*.csv"))
    folder = work / "feed"
    folder.mkdir()

    def link(paths: list[Path]) -> None:
        for path in paths:
            (folder / path.name).symlink_to(path)

    link(files[:-LATER])
    return folder, lambda: link(files[-LATER:])


def restart_arguments(parser: argparse.ArgumentParser) -> None:
    """The data's size, the repeats and the cap, and the hidden arguments of a child run."""
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--minutes", type=int, default=180)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs of each; the best counts")
    parser.add_argument("--cap", type=float, default=900, help="seconds before a run is stopped")
    add_child_arguments(parser)


def best_restarts(script: str, engines: tuple[str, ...], args: argparse.Namespace) -> tuple[dict[str, float], dict] | None:
    """Each engine's best ``restart_seconds`` over ``args.repeat`` alternating runs of ``script``
    on freshly generated bids, and the last run's figures; None (said on stderr) where a run failed."""
    with tempfile.TemporaryDirectory(prefix="restart-bench-") as folder:
        source = Path(folder) / "bids"
        generate(source, args.rows, args.keys, args.minutes, args.files)
        best: dict[str, float] = {}
        figures: dict = {}
        for _ in range(args.repeat):
            for engine in engines:
                done = run_child(script, engine, CASE, source, Path(folder) / engine, args.cap)
                if done.capped or done.error:
                    print(f"{engine}: {'stopped at the cap' if done.capped else done.error}", file=sys.stderr)
                    return None
                best[engine] = min(best.get(engine, float("inf")), done.figures["restart_seconds"])
                figures = done.figures
    return best, figures


def run_benchmark(script: str, engines: tuple[str, ...], child: Callable[[str, Path, Path], None],
                  report: Callable[[argparse.Namespace, dict[str, float], dict], None]) -> int:
    """A restart benchmark's command line: a child run (``child(engine, source, work)``) where
    asked, else every engine measured and ``report`` printing the best of each. Its exit code."""
    parser = argparse.ArgumentParser()
    restart_arguments(parser)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.source, args.work)
        return 0
    measured = best_restarts(script, engines, args)
    if measured is None:
        return 1
    report(args, *measured)
    return 0
