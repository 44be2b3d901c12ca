"""``mrecd forcefield import``: translate, then attach to a record or a new collection."""

from __future__ import annotations

import json
import re
from pathlib import Path

import openmm.app as app
import pytest

import mrecd
from mrecd.cli import main
from mrecd.forcefield import ForceField

DATA = Path(app.__file__).parent / "data"
TIP3P = str(DATA / "amber14" / "tip3p.xml")
PROTEIN = str(DATA / "amber14" / "protein.ff14SB.xml")
TOP = str(Path(__file__).parent / "data" / "butanamide.top")
NOTES = Path(__file__).parents[2] / "notes-ff-import.md"


def test_import_creates_then_replaces_a_record(tmp_path: Path) -> None:
    target = str(tmp_path / "ff.mrec")
    assert main(["forcefield", "import", TIP3P, "-o", target]) == 0
    with mrecd.open_record(target) as record:
        assert record.forcefield is not None and record.forcefield.name == "tip3p"
    assert main(["forcefield", "import", PROTEIN, TIP3P, "-o", target]) == 0
    with mrecd.open_record(target) as record:
        assert record.forcefield is not None
        assert record.forcefield.name == "protein.ff14SB+tip3p"
    assert mrecd.validate_record(target) == []


def test_import_into_a_catalog_record(tmp_path: Path) -> None:
    assert main(["forcefield", "import", TOP, "--catalog", str(tmp_path), "-o", "bua"]) == 0
    with mrecd.open(tmp_path).record("bua") as record:
        assert record.forcefield is not None
        assert record.forcefield.term("bond", "CT-HC")["k"] == 142256.0


def test_import_creates_a_collection_and_refuses_an_existing_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = str(tmp_path / "water.mrec.lmdb")
    assert main(["forcefield", "import", TIP3P, "-o", target]) == 0
    with mrecd.open_collection(target) as collection:
        assert collection.forcefield == ForceField.from_dict(collection.forcefield.to_dict())
        assert collection.forcefield is not None and collection.forcefield.name == "tip3p"
    assert main(["forcefield", "import", TIP3P, "-o", target]) == 2
    assert "set when the collection is created" in capsys.readouterr().err


def test_print_writes_the_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["forcefield", "import", TIP3P, "--print"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert ForceField.from_dict(data).atom("tip3p-O")["element"] == "O"


def test_a_refusal_exits_2_naming_the_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["forcefield", "import", str(DATA / "charmm36.xml"), "--print"]) == 2
    assert "--charmm-pi-impropers" in capsys.readouterr().err
    assert main(["forcefield", "import", TIP3P]) == 2  # neither -o nor --print
    assert main(["forcefield", "import", TOP, TIP3P, "--print"]) == 2


def test_the_notes_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    example = re.findall(r"```python\n(.*?)```", NOTES.read_text(), flags=re.DOTALL)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(example, str(NOTES), "exec"), {})
    mass, k, epsilon = (float(v) for v in capsys.readouterr().out.split())
    assert mass == 1.008
    assert k == pytest.approx(142256.0, rel=1e-15)
    assert epsilon == pytest.approx((0.4577296 * 0.0656888) ** 0.5)
    assert (tmp_path / "amber14.mrec").is_dir()
