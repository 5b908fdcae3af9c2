"""The step schedule has one source: schedule.h is the table's, and the C has no other copy."""

import re
from pathlib import Path

import build_program
import gen_schedule
import pytest
from gen_schedule import HEADER_PATH, c_header

from curta_chain.constants import MAX_COMPUTE_UNITS
from curta_chain.errors import BuildError
from curta_chain.onchain import schedule
from curta_chain.onchain.schedule import FORMULAS
from curta_chain.program.builds import BUILDS

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_header_is_the_tables():
    assert (ROOT / HEADER_PATH).read_text() == c_header(), "run scripts/gen_schedule.py"


def test_the_c_defines_no_cost_phase_or_budget_of_its_own():
    sources = [
        *(ROOT / "programs" / "curta" / "src").glob("*.c"),
        ROOT / "programs/curta/inference.h",
    ]
    own = re.compile(r"#define (COST_\w+|STEP_BUDGET|PH_\w+|TOK_\w+)\b")
    for source in sources:
        text = source.read_text()
        assert not own.findall(text), source.name
        assert not re.search(r"enum (LayerPhase|TokenizePhase)\b", text), source.name
    assert '#include "schedule.h"' in (ROOT / "programs/curta/inference.h").read_text()


@pytest.mark.parametrize("formula", FORMULAS, ids=lambda f: f.name)
def test_each_formula_renders_as_the_c_of_its_python_value(formula):
    """The rendered C, read back with C's operator precedence, gives the table's values."""
    body = formula.c().split(") ", 1)[1].replace(" / ", " // ")
    names = {c.name: c.number for c in schedule.COSTS}
    for values in (
        {p: 3 + 7 * i for i, p in enumerate(formula.params)},
        dict.fromkeys(formula.params, 61),
    ):
        assert eval(body, {}, {**names, **values}) == formula(**values)


def test_a_stale_header_is_named_and_rewritten(tmp_path: Path, capsys):
    header = tmp_path / "schedule.h"
    header.write_text(c_header().replace("#define COST_ROW 31", "#define COST_ROW 30"))
    assert header.read_text() != c_header()
    assert gen_schedule.main(["--check", "--header", str(header)]) == 1
    stale = f"{header}: stale, not the table's header: run scripts/gen_schedule.py"
    assert capsys.readouterr().err.strip() == stale
    assert gen_schedule.main(["--header", str(header)]) == 0
    assert header.read_text() == c_header()
    assert gen_schedule.main(["--check", "--header", str(header)]) == 0


def test_a_step_transaction_stays_within_the_compute_limit():
    # A step spends at most its budget and its overhead; its transaction adds at most the two
    # compute-budget instructions (a limit and a price).
    most = schedule.STEP_BUDGET + schedule.STEP_OVERHEAD + 2 * schedule.BUDGET_INSTRUCTION_UNITS
    assert most <= MAX_COMPUTE_UNITS


def test_the_build_refuses_a_header_that_is_not_the_tables(monkeypatch, tmp_path: Path):
    stale = tmp_path / "schedule.h"
    stale.write_text(c_header().replace("#define COST_ID 14", "#define COST_ID 15"))
    monkeypatch.setattr(build_program, "ROOT", tmp_path)
    monkeypatch.setattr(gen_schedule, "HEADER_PATH", "schedule.h")
    with pytest.raises(BuildError, match=r"^schedule.h differs from curta_chain/onchain/schedule"):
        build_program.build_one(BUILDS[0])
