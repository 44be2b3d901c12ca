"""The "Importing your data" example (README) runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTES = Path(__file__).parents[2] / "README.md"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def test_the_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    blocks = re.findall(r"```python\n(.*?)```", NOTES.read_text(), flags=re.DOTALL)
    example = next(b for b in blocks if "mrecd.ingest(" in b)
    monkeypatch.chdir(tmp_path)
    exec(compile(example, str(NOTES), "exec"), {})
    assert capsys.readouterr().out.splitlines() == ["10 0.01", "214 [0, 300, 600, 900]"]
    assert (tmp_path / "data" / "adk.mrec").is_dir()
    assert (tmp_path / "last.pdb").read_text().count("\nATOM  ") == 47681


def test_the_commands_name_real_options() -> None:
    from mrecd.cli import _parser

    text = NOTES.read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    commands = next(b for b in blocks if "mrecd ingest" in b)
    for line in commands.splitlines():
        _parser().parse_args(line.split("#")[0].split()[1:])  # argparse exits on unknown options
