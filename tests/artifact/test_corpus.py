"""The shared corpus (tests/corpus), read here and by the TypeScript decoder's suite.

Each case's recorded outcome is what this decoder says of it; the corpus is exactly what
scripts/make_corpus.py writes today, so a change of the format or of a message shows up
as a stale corpus here and must be regenerated (and then matched by sdk/js).
"""

import json
from pathlib import Path

import make_corpus
import pytest

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
MANIFEST = json.loads((CORPUS / "cases.json").read_text())


@pytest.mark.parametrize("case", MANIFEST["cases"], ids=lambda case: case["name"])
def test_each_case_decodes_as_recorded(case):
    data = make_corpus.apply((CORPUS / f"{case['base']}.curta").read_bytes(), case["edits"])
    outcome = make_corpus.outcome(data)
    assert outcome == {k: v for k, v in case.items() if k not in ("name", "base", "edits")}
    if "error" in outcome:
        assert "\n" not in outcome["error"] and outcome["error"].startswith("a.curta: ")


def test_the_corpus_is_what_the_script_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(make_corpus, "CORPUS", tmp_path)
    make_corpus.main()
    for path in sorted(CORPUS.iterdir()):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in CORPUS.iterdir())
