"""docs/numbers.md is what scripts/numbers_page.py renders from the recorded results."""

import json

import pytest
from numbers_page import PAGE, RESULTS, latest, record, render


def test_the_page_is_rendered_from_the_records():
    assert PAGE.read_text() == render(), "docs/numbers.md is stale: run scripts/numbers_page.py"


def test_every_record_says_how_to_reproduce_it_and_when_it_ran():
    records = latest()
    assert records, f"no records in {RESULTS}"
    for entry in records:
        assert entry.command.startswith((".venv/bin/", "CI=true ", "bash scripts/")), entry.bench
        assert len(entry.date) == 10 and entry.date[4] == entry.date[7] == "-", entry.bench
        # A build measured by hand runs no runtime; a benchmark's record names its solders.
        assert entry.runtime.startswith("solders ") or (entry.source and not entry.runtime), (
            entry.bench
        )
        assert all(len(row) == len(entry.columns) for row in entry.rows), entry.bench


def test_a_new_record_replaces_the_last_on_the_page_and_keeps_the_history(tmp_path):
    record("speed", "Speed", ".venv/bin/python scripts/bench_speed.py", ["x", "y"], [["a", 1]],
           results=tmp_path)  # fmt: skip
    first = render(tmp_path)
    assert "| a | 1 |" in first and "## Speed" in first
    record("speed", "Speed", ".venv/bin/python scripts/bench_speed.py", ["x", "y"], [["a", 2]],
           results=tmp_path)  # fmt: skip
    second = render(tmp_path)
    assert "| a | 2 |" in second and "| a | 1 |" not in second
    lines = (tmp_path / "speed.jsonl").read_text().splitlines()
    assert [json.loads(line)["rows"] for line in lines] == [[["a", "1"]], [["a", "2"]]]


def test_a_line_that_is_not_a_record_is_named(tmp_path):
    (tmp_path / "broken.jsonl").write_text('{"bench": "broken"}\n')
    with pytest.raises(SystemExit, match=r"broken.jsonl:1: not a benchmark record"):
        render(tmp_path)


def test_the_suite_s_time_and_slowest_tests_are_read_from_pytest_s_output():
    from suite_numbers import parse

    output = (
        "....F.s\n"
        "============================= slowest 25 durations =============================\n"
        "29.87s call     tests/cli/test_progress_terminal.py::test_publish\n"
        "4.87s setup    tests/cli/test_dead_ends.py::test_messages[a b]\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/cli/test_dead_ends.py::test_x - assert 93 == 352\n"
        "1 failed, 175 passed, 1 skipped in 231.56s (0:03:51)\n"
    )
    counts, seconds, slowest = parse(output)
    assert counts == {"failed": 1, "passed": 175, "skipped": 1} and seconds == 231.56
    assert slowest == [
        (29.87, "call", "tests/cli/test_progress_terminal.py::test_publish"),
        (4.87, "setup", "tests/cli/test_dead_ends.py::test_messages[a b]"),
    ]
    with pytest.raises(SystemExit, match="no pytest summary line"):
        parse("....F\n")


def test_a_section_on_an_older_runtime_says_so_and_a_build_names_none(tmp_path):
    for bench, runtime in (("old", "solders 0.26.0"), ("new", "solders 0.29.0"), ("build", "")):
        entry = record(bench, bench.title(), ".venv/bin/python x.py", ["a"], [["1"]],
                       results=tmp_path)  # fmt: skip
        lines = (tmp_path / f"{bench}.jsonl").read_text().splitlines()
        lines[-1] = json.dumps({**json.loads(lines[-1]), "runtime": runtime})
        (tmp_path / f"{bench}.jsonl").write_text("\n".join(lines) + "\n")
        assert entry.bench == bench
    page = render(tmp_path)
    assert (
        f"run {entry.date} on solders 0.26.0 (older than solders 0.29.0: to be measured again)"
        in page
    )
    assert f"run {entry.date} on solders 0.29.0," in page
    assert f"`.venv/bin/python x.py`: run {entry.date}, load average" in page
