"""Build hook: compile mrecd's one native module, the commit encoder, when this machine can.

``server/mrecd/bindings/zarr/_kernel.c`` is compiled with the C compiler the running Python
was built with, against its headers, and linked to the system's libzstd (``libzstd.so.1``;
zstd's own headers are used when present, not needed). It lands beside its source, so wheels
and editable installs both find it, and the wheel is then tagged for this platform.

Without a compiler or libzstd the build goes on: mrecd encodes in Python instead (slower
appends, the same records). ``MRECD_NATIVE=0`` skips the module; ``MRECD_NATIVE=1`` makes a
failed compile an error.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("server/mrecd/bindings/zarr/_kernel.c")


class NativeKernelHook(BuildHookInterface):  # type: ignore[type-arg]
    """Compile the commit encoder (see the module docstring)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Compile ``_kernel`` next to its source and ship it, or say why not."""
        wanted = os.environ.get("MRECD_NATIVE", "auto")
        if wanted == "0" or self.target_name != "wheel":  # an sdist ships the source only
            return
        root = Path(self.root)
        target = (root / SOURCE).with_name("_kernel" + sysconfig.get_config_var("EXT_SUFFIX"))
        try:
            _compile(root / SOURCE, target)
        except OSError as exc:
            if wanted == "1":
                raise
            print(
                f"mrecd: native commit encoder not built ({exc}); encoding in Python",
                file=sys.stderr,
            )
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        build_data["artifacts"].append(str(target.relative_to(root)))


def _compile(source: Path, target: Path) -> None:
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    flags = [
        "-O2",
        "-shared",
        "-fPIC",
        "-pthread",
        "-I" + sysconfig.get_paths()["include"],
        str(source),
        "-o",
        str(target) + ".tmp",
        "-l:libzstd.so.1",
    ]
    done = subprocess.run([*compiler, *flags], capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"{compiler[0]} exited {done.returncode}: {done.stderr.strip()[-800:]}")
    os.replace(str(target) + ".tmp", target)
