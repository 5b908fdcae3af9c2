"""The shared corpus (tests/corpus), read here and by the TypeScript decoder's suite.

Each case's recorded outcome is what this decoder says of it; the corpus is exactly what
scripts/make_corpus.py writes today, so a change of the format or of a message shows up
as a stale corpus here and must be regenerated (and then matched by sdk/js).
"""

import json
import re
import subprocess
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


def test_the_typescript_decoder_reads_every_case(sdk):
    """The SDK's decoder (a port of decode.py) is held to the whole corpus, case by case.

    Its suite (sdk/js/test/decode.test.ts) compares each outcome with the recorded one; here
    each case of cases.json must have passed there, by name, so none is skipped or lost.
    """
    done = subprocess.run(
        ["node", "--test", "dist/test/decode.test.js"],
        cwd=sdk, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = set(re.findall(r"^ok \d+ - corpus: (.+)$", done.stdout, re.M))
    assert passed == {case["name"] for case in MANIFEST["cases"]}
    assert not re.search(r"^not ok ", done.stdout, re.M)
