"""The ``mrecd`` command: a thin layer over :mod:`mrecd.api` (parse, call, print).

Subcommands::

    mrecd pack <dir.mrec> [-o file.mrec.zip] [--force]
    mrecd pack --archive <dir.mrec> [-o file.mrec.zip|dir.mrec] [--frames-per-chunk K] [--level L]
    mrecd validate <path>
    mrecd forcefield import FILE [FILE...] (-o TARGET | --print) [--catalog ROOT]
    mrecd push <path.mrec[.zip] | path.mrec.lmdb> <url> [--name N] [--overwrite] [--quiet]
    mrecd pull <url>/<name.mrec[.zip]> <path> [--overwrite] [--quiet]
    mrecd ingest TOPOLOGY [TRAJECTORY...] (-o STORE/NAME | --to http://HOST:PORT/NAME [--token T])
                 [--precision P] [--format F] [--quiet]
    mrecd export STORE/NAME -o out.xtc|.dcd|.pdb|.gro [--frame I] [--force]
    mrecd gc STORE[/NAME] [--dry-run]
    mrecd serve [STORE] [--host 127.0.0.1] [--port 8000] [--workers N] [--insecure] [--config F]

Exit status: 0 on success (``validate``: the record is clean), 1 when
``validate`` found violations, 2 for a usage error or a refused operation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import api, storage
from .errors import AlreadyExists, InvalidRecord, MrecdError
from .forcefield import ForceField, from_gromacs_top, from_openmm_xml

__all__ = ["main"]


def _pack(args: argparse.Namespace) -> int:
    if args.archive:
        dest = api.archive_record(
            args.source,
            args.output,
            frames_per_chunk=args.frames_per_chunk,
            level=19 if args.level is None else args.level,
            overwrite=args.force,
        )
    elif args.frames_per_chunk is not None or args.level is not None:
        raise InvalidRecord(
            "--frames-per-chunk and --level shape an archive: add --archive", path="--archive"
        )
    else:
        dest = api.pack_record(args.source, args.output, overwrite=args.force)
    print(os.fspath(dest))
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


_GROMACS_SUFFIXES = (".top", ".itp")


def _translate(args: argparse.Namespace) -> ForceField:
    files: list[str] = args.files
    gromacs = [f for f in files if f.endswith(_GROMACS_SUFFIXES)]
    if not gromacs:
        return from_openmm_xml(
            files,
            name=args.name,
            ignore_scripts=args.ignore_scripts,
            charmm_pi_impropers=args.charmm_pi_impropers,
        )
    if len(files) > 1:
        raise InvalidRecord(
            "a GROMACS topology is imported alone (its #include lines bring in the rest)",
            path=", ".join(files),
        )
    return from_gromacs_top(files[0], name=args.name)


def _attach(ff: ForceField, target: str, catalog: str | None) -> str:
    """Write ``ff`` into the record or collection ``target``; returns what was written."""
    if catalog is not None:
        cat = api.open(catalog)
        if target in cat:
            with cat.record(target, "r+") as record:
                record.write_forcefield(ff)
            return f"{catalog}: record {target} (force field replaced)"
        cat.create_record(target, forcefield=ff).close()
        return f"{catalog}: record {target} (created as a force-field package)"
    if target.endswith(".mrec.lmdb"):
        if os.path.exists(target):
            # The binding fixes a collection's ff when it is created; replacing
            # it under committed records is a storage-layer change, not an import.
            raise AlreadyExists(
                "a collection's force field is set when the collection is created; this one"
                " exists (import into a new *.mrec.lmdb path)",
                path=target,
            )
        api.create_collection(target, meta={"units": ff.units}, forcefield=ff).close()
        return f"{target} (collection created with the force field)"
    if Path(target).exists():
        with api.open_record(target, "r+") as record:
            record.write_forcefield(ff)
        return f"{target} (force field replaced)"
    api.create_record(target, forcefield=ff).close()
    return f"{target} (created as a force-field package)"


def _forcefield_import(args: argparse.Namespace) -> int:
    if args.output is None and not args.print:
        raise InvalidRecord("give -o TARGET, --print, or both", path="forcefield import")
    ff = _translate(args)
    if args.print:
        json.dump(ff.to_dict(), sys.stdout, allow_nan=False)
        sys.stdout.write("\n")
    if args.output is not None:
        print(f"wrote {_attach(ff, args.output, args.catalog)}", file=sys.stderr)
    return 0


def _forcefield_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = commands.add_parser("forcefield", help="force-field sections")
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    imp = actions.add_parser(
        "import",
        help="translate OpenMM XML (*.xml) or a GROMACS topology (*.top, *.itp) and attach it",
    )
    imp.add_argument("files", nargs="+", metavar="FILE", help="the force-field file(s)")
    imp.add_argument(
        "-o",
        "--output",
        metavar="TARGET",
        help="a record (<stem>.mrec, created when absent) or a new collection (<name>.mrec.lmdb)",
    )
    imp.add_argument("--catalog", metavar="ROOT", help="TARGET is a record name in this catalog")
    imp.add_argument("--print", action="store_true", help="write the JSON document to stdout")
    imp.add_argument("--name", help="the force field's name (default: from the files)")
    imp.add_argument(
        "--ignore-scripts",
        action="store_true",
        help="skip OpenMM <Script>/<InitializationScript> elements instead of refusing",
    )
    imp.add_argument(
        "--charmm-pi-impropers",
        action="store_true",
        help="store k*(theta-theta0)^2 impropers with theta0 = pi as chi0 = 180 degrees",
    )
    imp.set_defaults(run=_forcefield_import)


def _push(args: argparse.Namespace) -> int:
    if os.fspath(args.source).rstrip("/").endswith(".mrec.lmdb"):
        url = api.publish_collection(
            args.source,
            args.url,
            name=args.name,
            overwrite=args.overwrite,
            progress=not args.quiet,
        )
        print(url)
        return 0
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
        "push",
        help="copy a closed record, or publish a collection snapshot, to a store"
        " (s3://bucket/prefix, gs://, az://, a path)",
    )
    push.add_argument(
        "source",
        help="the record (<stem>.mrec or <stem>.mrec.zip), or a collection (<stem>.mrec.lmdb):"
        " published compacted as one object plus <name>.mrec.lmdb.manifest.json",
    )
    push.add_argument("url", help="where records live, e.g. s3://bucket/lab")
    push.add_argument("--name", help="the record's name there (default: its stem)")
    pull = commands.add_parser("pull", help="copy a record from a store to a local path")
    pull.add_argument("url", help="the record, e.g. s3://bucket/lab/run-42.mrec")
    pull.add_argument("dest", help="the local record path, or a directory to put it in")
    for command, run in ((push, _push), (pull, _pull)):
        command.add_argument("--overwrite", action="store_true", help="replace a record there")
        command.add_argument("--quiet", action="store_true", help="no progress bar")
        command.set_defaults(run=run)


def _gc(args: argparse.Namespace) -> int:
    verb = "would delete" if args.dry_run else "deleted"
    for url, garbage in api.collect_trajectory_garbage(args.target, dry_run=args.dry_run):
        for key in garbage.deleted:
            print(f"{verb} {key}")
        if garbage.young:
            print(
                f"{url}: left {len(garbage.young)} object(s) past the commit younger than the"
                " grace (a commit may be in flight)",
                file=sys.stderr,
            )
        print(f"{url}: {len(garbage.deleted)} object(s) {verb}", file=sys.stderr)
    return 0


def _gc_command(commands: Any) -> None:
    gc = commands.add_parser(
        "gc", help="delete a trajectory's objects past its committed nstep (a crashed writer's)"
    )
    gc.add_argument("target", help="a store (every record), STORE/NAME, or a record root")
    gc.add_argument("--dry-run", action="store_true", help="list what would go, delete nothing")
    gc.set_defaults(run=_gc)


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
    from .md import ingest, split_target, split_url  # MDAnalysis loads only for these commands

    target: str = args.output or args.to
    store: str | Path
    if args.to:
        store, name = split_url(args.to)
    else:
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
        token=args.token or os.environ.get("MRECD_TOKEN") or None,
    )
    precision = "lossless" if done.precision is None else f"precision {done.precision:g} Å"
    print(
        f"{target}: {done.frames} frames of {done.atoms} atoms, {precision},"
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
    where = ingest.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", help="the new record: STORE/NAME")
    where.add_argument(
        "--to", metavar="URL", help="the new record on a server: http://HOST:PORT/NAME"
    )
    ingest.add_argument(
        "--token", help="bearer token for --to (default: the MRECD_TOKEN environment variable)"
    )
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


def _serve(args: argparse.Namespace) -> int:
    from .service import serve  # fastapi and uvicorn load only for this command

    serve(
        args.store,
        host=args.host,
        port=args.port,
        workers=args.workers,
        insecure=args.insecure,
        config=args.config,
    )
    return 0


def _serve_command(commands: Any) -> None:
    serve = commands.add_parser("serve", help="serve a store over HTTP (the /v1 API)")
    serve.add_argument("store", nargs="?", help="the store URL or path (default ./data, created)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (8000)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (1)")
    serve.add_argument(
        "--config", help="a TOML file of settings (store, tokens, limits); MRECD_* variables win"
    )
    serve.add_argument(
        "--insecure", action="store_true", help="allow binding beyond loopback without tokens"
    )
    serve.set_defaults(run=_serve)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mrecd", description="Store and check molrec records.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pack = commands.add_parser("pack", help="pack a closed *.mrec directory into a *.mrec.zip")
    pack.add_argument("source", help="the record directory (<stem>.mrec)")
    pack.add_argument(
        "-o", "--output", help="the archive to write (default: <stem>.mrec.zip beside it)"
    )
    pack.add_argument("--force", action="store_true", help="replace an existing archive")
    pack.add_argument(
        "--archive",
        action="store_true",
        help="repack for archive: multi-frame chunks, shuffle + zstd 19 (denser, still range-read)",
    )
    pack.add_argument(
        "--frames-per-chunk",
        type=int,
        metavar="K",
        help="with --archive: frames per inner chunk (default: about 4 MiB of values per chunk)",
    )
    pack.add_argument("--level", type=int, metavar="L", help="with --archive: zstd level 1-22")
    pack.set_defaults(run=_pack)
    validate = commands.add_parser(
        "validate", help="check a record (directory or zip) against every known rule"
    )
    validate.add_argument("path", help="the record (<stem>.mrec or <stem>.mrec.zip)")
    validate.set_defaults(run=_validate)
    _forcefield_parser(commands)
    _add_transfer(commands)
    _md_commands(commands)
    _serve_command(commands)
    _gc_command(commands)
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
