"""What installing and testing the package shows a user: no deprecation, no hidden skips."""

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from curta_chain.errors import BuildError
from curta_chain.inference.host_build import build_key, compiler

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """The wheel ``pip wheel`` builds from the checkout, and pip's output."""
    folder = tmp_path_factory.mktemp("wheel")
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(folder), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (built,) = folder.glob("curta_chain-*.whl")
    return built, out.stdout + out.stderr


def test_the_wheel_builds_without_deprecations_and_ships_the_programs(wheel):
    built, output = wheel
    assert "deprecat" not in output.lower()
    with zipfile.ZipFile(built) as archive:
        names = set(archive.namelist())
        (metadata,) = (n for n in names if n.endswith(".dist-info/METADATA"))
        fields = archive.read(metadata).decode()
    assert "License-Expression: MIT" in fields.splitlines()
    shipped = {"py.typed", "program/curta.so", "program/curta_v3.so", "program/curta.json"}
    assert {f"curta_chain/{name}" for name in shipped} <= names
    # The program's C that `run` builds for the host: every source and header it reads.
    program = REPO / "programs" / "curta"
    c_files = [*program.glob("*.h"), *program.glob("src/*.c"), *program.glob("host/*.[ch]")]
    sources = {f"curta_chain/program/c/{p.relative_to(program)}" for p in c_files}
    assert {name for name in names if name.startswith("curta_chain/program/c/")} == sources
    # The build tools stay out: the SBPF linker (programs/sbpf_linker) and the scripts.
    assert not any(name.startswith(("sbpf_linker/", "programs/", "scripts/")) for name in names)


def test_an_installed_wheel_runs_the_programs_c(wheel, tmp_path, stories260k):
    # The wheel unpacked as pip installs it, ahead of the checkout on the path, with a cache
    # of its own: `run` builds the program's C from the wheel's copy and computes with it.
    try:
        cc = compiler()
    except BuildError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"{exc}: the program's C cannot be built here")
    built, _ = wheel
    site = tmp_path / "site"
    with zipfile.ZipFile(built) as archive:
        archive.extractall(site)
    artifact = tmp_path / "stories260K.curta"
    artifact.write_bytes(stories260k.data)
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("CURTA_CHAIN_NATIVE", None)
    script = "import curta_chain.cli as c, sys; print(c.__file__); sys.exit(c.main())"
    argv = [sys.executable, "-c", script, "run", str(artifact), "-n", "12", "-s", "3"]
    out = subprocess.run(
        [*argv, "--output", "json-compact"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    where, line = out.stdout.splitlines()
    assert Path(where).is_relative_to(site)
    assert json.loads(line)["forward_pass"] == "native", out.stderr
    (library,) = (tmp_path / "cache").rglob("libcurta_host.so")  # built here, from the wheel
    assert library.parent.name == build_key(cc, site / "curta_chain" / "program" / "c")


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
