"""What installing and testing the package shows a user: no deprecation, no hidden skips."""

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_license_is_an_spdx_string_not_a_deprecated_table():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    (backend,) = project["build-system"]["requires"]
    assert backend.startswith("setuptools>=") and int(backend.split(">=")[1]) >= 77


def test_skipped_tests_are_listed_with_their_reason_even_with_q():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    (report,) = [
        o for o in project["tool"]["pytest"]["ini_options"]["addopts"].split() if o.startswith("-r")
    ]
    # s: skips with their reasons; f and E: failures and errors, which -r alone would drop.
    assert {"s", "f", "E"} <= set(report[2:])


def test_every_dependency_is_pinned_in_the_constraints():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    pins = dict(
        line.split("==")
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    for requirement in project["project"]["dependencies"]:
        name, version = requirement.split("==")
        assert pins[name] == version, name
