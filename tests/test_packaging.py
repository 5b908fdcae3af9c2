"""What installing and testing the package shows a user: no deprecation, no hidden skips."""

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_wheel_builds_without_deprecations_and_ships_the_programs(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "deprecat" not in (out.stdout + out.stderr).lower()
    (wheel,) = tmp_path.glob("curta_chain-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (metadata,) = (n for n in names if n.endswith(".dist-info/METADATA"))
        fields = archive.read(metadata).decode()
    assert "License-Expression: MIT" in fields.splitlines()
    shipped = {"py.typed", "program/curta.so", "program/curta_v3.so", "program/curta.json"}
    assert {f"curta_chain/{name}" for name in shipped} <= names
    # The build tools stay out: the SBPF linker (programs/sbpf_linker) and the scripts.
    assert not any(name.startswith(("sbpf_linker/", "programs/", "scripts/")) for name in names)


def test_skipped_tests_are_listed_with_their_reason_even_with_q(tmp_path):
    (tmp_path / "test_one.py").write_text(
        "import pytest\n\ndef test_absent():\n    pytest.skip('needs a tool that is absent')\n"
    )
    # The project's own configuration, with only the collection moved to the temporary file.
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-c",
            str(REPO / "pyproject.toml"),
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_one.py"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "needs a tool that is absent" in out.stdout, out.stdout


def test_every_dependency_is_pinned_in_the_constraints():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    pins = dict(
        line.split("==")
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    extras = [r for group in project["project"]["optional-dependencies"].values() for r in group]
    for requirement in [*project["project"]["dependencies"], *extras]:
        name, version = requirement.split("==")
        assert pins[name] == version, name


def test_the_editable_install_of_setup_sh_says_no_build_backend_warning(tmp_path):
    # scripts/setup.sh's install, into a folder of its own (this venv's stays as it is).
    site = tmp_path / "site"
    out = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site),
         "-e", str(REPO)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert "BuildBackendWarning" not in out.stdout + out.stderr, out.stderr
    # The checkout's root is on the path, as a plain entry: it holds curta_chain.
    (pth,) = site.glob("__editable__*.pth")
    assert pth.read_text().split() == [str(REPO)]
