"""The "Importing your data" example (notes-md-ingest.md, later the README) runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTES = Path(__file__).parents[2] / "notes-md-ingest.md"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def test_the_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", NOTES.read_text(), flags=re.DOTALL)
    monkeypatch.chdir(tmp_path)
    exec(compile(example, str(NOTES), "exec"), {})
    assert capsys.readouterr().out.splitlines() == ["10 0.01", "214 [0, 300, 600, 900]"]
    assert (tmp_path / "data" / "adk.mrec").is_dir()
    assert (tmp_path / "last.pdb").read_text().count("\nATOM  ") == 47681


def test_the_commands_name_real_options() -> None:
    from mrecd.cli import _parser

    text = NOTES.read_text()
    (commands,) = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    for line in commands.splitlines():
        _parser().parse_args(line.split("#")[0].split()[1:])  # argparse exits on unknown options
