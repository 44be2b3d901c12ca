"""The ``mrecd`` command: a thin layer over :mod:`mrecd.api` (parse, call, print).

Subcommands::

    mrecd pack <dir.mrec> [-o file.mrec.zip] [--force]
    mrecd validate <path>
    mrecd ingest TOPOLOGY [TRAJECTORY...] -o STORE/NAME [--precision P] [--format F] [--quiet]
    mrecd export STORE/NAME -o out.xtc|.dcd|.pdb|.gro [--frame I] [--force]

Exit status: 0 on success (``validate``: the record is clean), 1 when
``validate`` found violations, 2 for a usage error or a refused operation.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import api
from .errors import MrecdError

__all__ = ["main"]


def _pack(args: argparse.Namespace) -> int:
    dest = api.pack_record(args.source, args.output, overwrite=args.force)
    print(dest)
    return 0


def _validate(args: argparse.Namespace) -> int:
    violations = api.validate_record(args.path)
    for violation in violations:
        print(violation)
    if violations:
        print(f"{len(violations)} violation(s) in {args.path}", file=sys.stderr)
        return 1
    print(f"{args.path}: ok", file=sys.stderr)
    return 0


def _without_mdanalysis(run: Callable[[argparse.Namespace], int]) -> Callable[..., int]:
    """``run``, but without MDAnalysis: say how to install it and exit 2 (no traceback)."""

    def checked(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except ImportError as exc:
            print(f"mrecd {args.command}: {exc}", file=sys.stderr)
            return 2

    return checked


def _ingest(args: argparse.Namespace) -> int:
    from .md import ingest, split_target  # MDAnalysis loads only for these commands

    store, name = split_target(args.output)
    done = ingest(
        [args.topology, *args.trajectories],
        store,
        name,
        precision=args.precision,
        start=args.start,
        stop=args.stop,
        step=args.step,
        progress=not args.quiet,
        format=args.format,
        topology_format=args.topology_format,
    )
    precision = "lossless" if done.precision is None else f"precision {done.precision:g} Å"
    print(
        f"{args.output}: {done.frames} frames of {done.atoms} atoms, {precision},"
        f" {done.frames_per_second:.0f} frames/s",
        file=sys.stderr,
    )
    return 0


def _export(args: argparse.Namespace) -> int:
    from .md import export

    frames = export(
        args.source,
        args.output,
        frame=args.frame,
        start=args.start,
        stop=args.stop,
        step=args.step,
        overwrite=args.force,
    )
    print(f"{args.output}: {frames} frames", file=sys.stderr)
    return 0


def _frame_options(command: argparse.ArgumentParser) -> None:
    for flag in ("start", "stop", "step"):
        command.add_argument(f"--{flag}", type=int, help=f"frame slice {flag} (Python slicing)")


def _md_commands(commands: Any) -> None:
    ingest = commands.add_parser(
        "ingest", help="read a trajectory with MDAnalysis into a new record (needs mrecd[md])"
    )
    ingest.add_argument("topology", help="topology file (PSF, PRMTOP, TPR, GRO, PDB ...)")
    ingest.add_argument("trajectories", nargs="*", help="trajectory files (XTC, DCD, TRR ...)")
    ingest.add_argument("-o", "--output", required=True, help="the new record: STORE/NAME")
    ingest.add_argument(
        "--precision", type=float, help="declared x/y/z precision in Å (default: the source's)"
    )
    _frame_options(ingest)
    ingest.add_argument(
        "--format", help="MDAnalysis trajectory format, when the extension lacks it"
    )
    ingest.add_argument("--topology-format", help="MDAnalysis topology format, likewise")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.set_defaults(run=_without_mdanalysis(_ingest))
    export = commands.add_parser("export", help="write a record's trajectory through MDAnalysis")
    export.add_argument("source", help="the record: STORE/NAME, or a *.mrec / *.mrec.zip path")
    export.add_argument("-o", "--output", required=True, help="out.xtc, .dcd, .pdb, .gro ...")
    export.add_argument("--frame", type=int, help="write only this frame (-1: the last)")
    _frame_options(export)
    export.add_argument("--force", action="store_true", help="replace an existing file")
    export.set_defaults(run=_without_mdanalysis(_export))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mrecd", description="Store and check molrec records.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pack = commands.add_parser("pack", help="pack a closed *.mrec directory into a *.mrec.zip")
    pack.add_argument("source", help="the record directory (<stem>.mrec)")
    pack.add_argument(
        "-o", "--output", help="the archive to write (default: <stem>.mrec.zip beside it)"
    )
    pack.add_argument("--force", action="store_true", help="replace an existing archive")
    pack.set_defaults(run=_pack)
    validate = commands.add_parser(
        "validate", help="check a record (directory or zip) against every known rule"
    )
    validate.add_argument("path", help="the record (<stem>.mrec or <stem>.mrec.zip)")
    validate.set_defaults(run=_validate)
    _md_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except MrecdError as exc:
        print(f"mrecd {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
