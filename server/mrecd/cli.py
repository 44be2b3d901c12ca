"""The ``mrecd`` command: a thin layer over :mod:`mrecd.api` (parse, call, print).

Subcommands::

    mrecd pack <dir.mrec> [-o file.mrec.zip] [--force]
    mrecd validate <path>
    mrecd push <path.mrec[.zip]> <url> [--name N] [--overwrite] [--quiet]
    mrecd pull <url>/<name.mrec[.zip]> <path> [--overwrite] [--quiet]

Exit status: 0 on success (``validate``: the record is clean), 1 when
``validate`` found violations, 2 for a usage error or a refused operation.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from . import api, storage
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


def _push(args: argparse.Namespace) -> int:
    url = storage.push(
        args.source, args.url, name=args.name, progress=not args.quiet, overwrite=args.overwrite
    )
    print(url)
    return 0


def _pull(args: argparse.Namespace) -> int:
    path = storage.pull(args.url, args.dest, progress=not args.quiet, overwrite=args.overwrite)
    print(path)
    return 0


def _add_transfer(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    push = commands.add_parser(
        "push", help="copy a closed record to a store (s3://bucket/prefix, gs://, az://, a path)"
    )
    push.add_argument("source", help="the record (<stem>.mrec or <stem>.mrec.zip)")
    push.add_argument("url", help="where records live, e.g. s3://bucket/lab")
    push.add_argument("--name", help="the record's name there (default: its stem)")
    pull = commands.add_parser("pull", help="copy a record from a store to a local path")
    pull.add_argument("url", help="the record, e.g. s3://bucket/lab/run-42.mrec")
    pull.add_argument("dest", help="the local record path, or a directory to put it in")
    for command, run in ((push, _push), (pull, _pull)):
        command.add_argument("--overwrite", action="store_true", help="replace a record there")
        command.add_argument("--quiet", action="store_true", help="no progress bar")
        command.set_defaults(run=run)


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
    _add_transfer(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except (MrecdError, OSError) as exc:
        print(f"mrecd {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
