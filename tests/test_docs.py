"""The manuals (README.md and docs/*.md) read as manuals and point at what exists.

A manual says what the software does and how to use it; history belongs to the git log and
measured figures to docs/numbers.md (generated from its records), linked, not copied. Rules:

- no issue numbers (``issue 21``, ``issues #3``), anywhere;
- in prose (outside code blocks and `code spans`): no times of day (``10:55``), no dates
  (``2026-12-03``, ``1 December``, ``May 2024``; docs/numbers.md is exempt, its records carry
  their run dates by design), no commit hashes (a word of 7 to 40 lower-case hex digits with
  a digit and a letter), no talk of branches (``this branch``, ``on branch``, ``main's``);
- every relative link (and its ``#anchor``) leads to something that exists, and so does every
  repository path in a code span: a span with no space whose first folder is a folder of the
  repository, or whose name ends in an extension the repository uses (``.py``, ``.md``,
  ``.c``...), is found among the repository's files, whole or as the tail of a path
  (``src/matvec.c``); a dotted name under the package (``curta_chain.chain.rpc``,
  ``program.run_mirror``, ``BusyOptions.busy``) names a module or class of the package, and
  the names after it are defined there;
- the README quotes at most two measured figures. A measured figure is a number followed by
  a unit of time, money, size or rate (``MEASURED_UNITS``) in the README's prose. Counts
  (writes, tokens) and protocol limits (given in bytes, MiB or KiB) are not measured figures.

The docs/spec/ copies of the format specs are law for bytes and are not checked here.
"""

import fnmatch
import itertools
import re
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


DATES_ALLOWED = ("docs/numbers.md",)
"""Its sections say the date each record was run."""

NOT_OURS = frozenset(
    {
        # llama2.c's files, which docs/demo-model.md and the tests' data name.
        "run.c",
        "model.py",
        "export.py",
        "tokenizer.py",
        "tinystories.py",
        # Files the software writes at run time, not files of the repository.
        "meta.json",
        "validator.log",
        "config.yml",
        "config.json",
        "libcurta_host.so",
    }
)
"""Names in code spans that look like repository files and are someone else's."""

HEX_WORDS_ALLOWED = frozenset({"ed25519"})
"""Words of hex digits that are not commit hashes."""

MEASURED_UNITS = r"SOL|lamports?|µs|ms|s|min|minutes?|hours?|h|GB|MB|KB|tokens/s|tx/s|x|×|%"
README_MEASURED_FIGURES_AT_MOST = 2

EXTENSIONS = frozenset(
    {"py", "md", "c", "h", "ts", "mjs", "js", "json", "jsonl", "sh", "toml", "txt", "so", "png"}
    | {"yml", "yaml", "lock", "html", "css", "cfg", "ini"}
)
FILE_EXTENSIONS = EXTENSIONS | {"bin", "rs", "log", "curta", "elf", "o", "cjs"}
"""What ends a file name that is not a dotted Python name (``model.bin``, ``rpc.rs``)."""
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"

ISSUE = re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)
TIME_OF_DAY = re.compile(r"(?<![\w:.])\d{1,2}:\d{2}\b(?!:\d)")
DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}} (?:{MONTHS})\b|\b(?:{MONTHS}),? \d{{4}}\b"
)
COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
BRANCH = re.compile(
    r"\b(?:this|that|our|their|git|feature|on|each engineer's) branch(?:es)?\b"
    r"|\bbranch(?:es)? [`'\"]|\bmain's\b",
    re.IGNORECASE,
)
MEASURED = re.compile(rf"(?<![\w.,/-])\d[\d,]*(?:\.\d+)?\s?(?:{MEASURED_UNITS})(?![\w/])")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
SPAN = re.compile(r"(`+)((?:(?!\1)[^\n]|\n(?![ \t]*\n))+?)\1(?!`)")
LINK = re.compile(r"!?\[(?:[^\]\n]|\n(?![ \t]*\n))*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
PYTHON_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")


@dataclass(frozen=True)
class Doc:
    """A Markdown document, with its code blocks and code spans told apart from its prose."""

    name: str
    text: str
    prose: str
    """The text with every code block blanked (its lines kept empty, so line numbers hold)."""
    bare: str
    """The prose with every code span blanked too (spaces, the newlines kept)."""
    spans: tuple[tuple[int, str], ...]
    """Each code span of the prose: its offset and its content."""

    @classmethod
    def parse(cls, name: str, text: str) -> "Doc":
        prose = blank_code_blocks(text)
        spans = tuple((m.start(), m.group(2)) for m in SPAN.finditer(prose))
        bare = SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose)
        return cls(name, text, prose, bare, spans)

    def where(self, source: str, offset: int, what: str) -> str:
        """``file:line: what`` for an offset into ``source`` (the text, prose or bare)."""
        return f"{self.name}:{source.count(chr(10), 0, offset) + 1}: {what}"


def blank_code_blocks(text: str) -> str:
    """Return ``text`` with fenced and indented code blocks' lines emptied."""
    lines = text.split("\n")
    out = []
    fence = None
    previous_blank = True
    in_indented = False
    for line in lines:
        opening = FENCE.match(line)
        if fence:
            out.append("")
            if opening and opening.group(1) == fence:
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            out.append("")
            continue
        blank = not line.strip()
        in_indented = line.startswith("    ") and not blank and (previous_blank or in_indented)
        out.append("" if in_indented else line)
        previous_blank = blank
    return "\n".join(out)


def manuals() -> list[str]:
    names = [f"docs/{path.name}" for path in sorted((ROOT / "docs").glob("*.md"))]
    return [*names, "README.md"]


CHECKED = manuals()


@cache
def load(name: str) -> Doc:
    return Doc.parse(name, (ROOT / name).read_text())


@cache
def repository_entries() -> frozenset[str]:
    """Every file of the repository (tracked, or new and not ignored) and every folder of them."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"the repository's files are listed by git, which failed here: {exc}")
    files = [path for path in listed if (ROOT / path).exists()]
    folders = {str(parent) for path in files for parent in Path(path).parents if parent.parts}
    return frozenset(files) | frozenset(folders)


@cache
def folder_names() -> frozenset[str]:
    return frozenset(Path(entry).name for entry in repository_entries() if (ROOT / entry).is_dir())


def expand_braces(path: str) -> list[str]:
    """``a/{b,c}.py`` -> ``a/b.py``, ``a/c.py`` (one level of braces, as the docs write them)."""
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return list(
        itertools.chain.from_iterable(
            expand_braces(path[: match.start()] + choice + path[match.end() :])
            for choice in match.group(1).split(",")
        )
    )


def repository_path(span: str) -> str | None:
    """The repository path a code span names, or None when it names none."""
    span = re.sub(r"\s+", "", span) if "{" in span else span.strip()
    if not span or re.search(r"\s", span) or "://" in span or span[0] in "/~$@-":
        return None
    span = span.split("::")[0]
    span = re.sub(r":\d+(?::\d+)?$", "", span)
    if not re.fullmatch(r"[\w.*{},<>/+-]+", span):
        return None
    if "/" in span:
        first = span.split("/")[0]
        if first in repository_entries() or first in folder_names() or first == "*":
            return span
        return None
    extension = span.rpartition(".")[2] if "." in span else ""
    if extension in EXTENSIONS and span not in NOT_OURS and span[0] not in "*.":
        return span
    return None


def path_exists(path: str) -> bool:
    entries = repository_entries()
    for each in expand_braces(path):
        pattern = re.sub(r"<[^<>]*>", "*", each).rstrip("/")
        if any(ch in pattern for ch in "*?["):
            found = any(
                fnmatch.fnmatchcase(entry, pattern) or fnmatch.fnmatchcase(entry, f"*/{pattern}")
                for entry in entries
            )
        else:
            found = pattern in entries or any(entry.endswith(f"/{pattern}") for entry in entries)
        if not found:
            return False
    return True


def is_python_name(name: str) -> bool:
    """A dotted Python name: not a file name (``model.bin``) nor a JSON field (``x.apiVersion``)."""
    parts = name.split(".")
    return (
        PYTHON_NAME.fullmatch(name) is not None
        and parts[-1] not in FILE_EXTENSIONS
        and not any(re.fullmatch(r"[a-z]+[A-Z]\w*", part) for part in parts)
    )


def python_name_exists(dotted: str) -> bool | None:
    """Whether a dotted name under the package exists; None when it is not under the package."""
    parts = dotted.split(".")
    if parts[0] != "curta_chain":
        if not (ROOT / "curta_chain" / parts[0]).is_dir():
            return name_in_a_module(parts)
        parts = ["curta_chain", *parts]
    folder = ROOT
    rest: list[str] = []
    module = None
    for index, part in enumerate(parts):
        if (folder / part).is_dir():
            folder = folder / part
            continue
        if (folder / f"{part}.py").is_file():
            module, rest = folder / f"{part}.py", parts[index + 1 :]
        else:
            module, rest = folder / "__init__.py", parts[index:]
        break
    if module is None or not rest:
        return True
    if not module.is_file():
        return False
    source = module.read_text()
    return all(re.search(rf"\b{re.escape(name)}\b", source) for name in rest)


def name_in_a_module(parts: list[str]) -> bool | None:
    """``module.name`` or ``Class.name`` where the package has such a module or class.

    The name must appear in that module (any module of that name) or the class's module;
    None when the package has no module or class by the first part's name.
    """
    package = ROOT / "curta_chain"
    first, rest = parts[0], parts[1:]
    if first[0].isupper():
        homes = [
            path
            for path in package.rglob("*.py")
            if re.search(rf"^class {re.escape(first)}\b", path.read_text(), re.MULTILINE)
        ]
    else:
        homes = [path for path in package.rglob(f"{first}.py")]
    if not homes:
        return None
    return any(
        all(re.search(rf"\b{re.escape(name)}\b", home.read_text()) for name in rest)
        for home in homes
    )


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(doc: Doc) -> set[str]:
    found: set[str] = set()
    for match in HEADING.finditer(doc.prose):
        base = slug(match.group(1))
        name, count = base, 0
        while name in found:
            count += 1
            name = f"{base}-{count}"
        found.add(name)
    return found


# The rules: each returns the offending places of one document as "file:line: what".


def issue_numbers(doc: Doc) -> list[str]:
    return [doc.where(doc.text, m.start(), m.group(0)) for m in ISSUE.finditer(doc.text)]


def times_of_day(doc: Doc) -> list[str]:
    return [doc.where(doc.bare, m.start(), m.group(0)) for m in TIME_OF_DAY.finditer(doc.bare)]


def dates(doc: Doc) -> list[str]:
    return [doc.where(doc.bare, m.start(), m.group(0)) for m in DATE.finditer(doc.bare)]


def commits_and_branches(doc: Doc) -> list[str]:
    found = [
        doc.where(doc.bare, m.start(), f"commit hash? {m.group(0)}")
        for m in COMMIT.finditer(doc.bare)
        if m.group(0) not in HEX_WORDS_ALLOWED
    ]
    found += [doc.where(doc.bare, m.start(), m.group(0)) for m in BRANCH.finditer(doc.bare)]
    return found


def broken_links(doc: Doc) -> list[str]:
    found = []
    for match in LINK.finditer(doc.bare):
        target = match.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        if path:
            resolved = (ROOT / doc.name).parent / path
            if not resolved.exists():
                found.append(doc.where(doc.bare, match.start(), f"no such file: {target}"))
                continue
            linked = str(resolved.resolve().relative_to(ROOT))
            target_doc = load(linked) if linked.endswith(".md") else None
        else:
            target_doc = doc
        if anchor and target_doc is not None and anchor not in anchors(target_doc):
            found.append(doc.where(doc.bare, match.start(), f"no such heading: {target}"))
    return found


def stale_names(doc: Doc) -> list[str]:
    found = []
    for offset, span in doc.spans:
        path = repository_path(span)
        if path is not None:
            if not path_exists(path):
                found.append(doc.where(doc.prose, offset, f"no such path: `{span}`"))
            continue
        name = span.strip().split("(")[0]
        if is_python_name(name) and python_name_exists(name) is False:
            found.append(doc.where(doc.prose, offset, f"no such name: `{span}`"))
    return found


def measured_figures(doc: Doc) -> list[str]:
    return [doc.where(doc.bare, m.start(), m.group(0)) for m in MEASURED.finditer(doc.bare)]


@pytest.mark.parametrize("name", CHECKED)
def test_no_issue_numbers(name):
    assert issue_numbers(load(name)) == []


@pytest.mark.parametrize("name", CHECKED)
def test_no_times_of_day_in_prose(name):
    assert times_of_day(load(name)) == []


@pytest.mark.parametrize("name", [name for name in CHECKED if name not in DATES_ALLOWED])
def test_no_dates_in_prose(name):
    assert dates(load(name)) == []


@pytest.mark.parametrize("name", CHECKED)
def test_no_commit_hashes_or_branches_in_prose(name):
    assert commits_and_branches(load(name)) == []


@pytest.mark.parametrize("name", CHECKED)
def test_every_relative_link_leads_somewhere(name):
    assert broken_links(load(name)) == []


@pytest.mark.parametrize("name", CHECKED)
def test_every_repository_path_and_package_name_exists(name):
    assert stale_names(load(name)) == []


def test_the_readme_quotes_at_most_two_measured_figures():
    figures = measured_figures(load("README.md"))
    assert len(figures) <= README_MEASURED_FIGURES_AT_MOST, (
        "the README links docs/numbers.md's sections instead of quoting them",
        figures,
    )


def test_each_rule_finds_what_it_is_for_and_not_in_code():
    sample = "\n".join(
        [
            "# Title",
            "",
            "Issue 20. Fixed at 10:55 on 2026-12-03 (1 December), commit 1d89912 on this branch.",
            "It costs 0.41 SOL and 39 minutes; the limit is 1,232 bytes or 10 MiB.",
            "See [gone](nowhere.md), [here](#title), [there](#nothing) and `scripts/gone.py`,",
            "`src/matvec.c`, `curta_chain.chain.rpc`, `program.no_such_module` and",
            "`curta_chain.constants.NO_SUCH_CONSTANT`.",
            "",
            "```",
            "issue 3 at 10:55 on 2026-12-03, commit 1d89912, 5 SOL, `scripts/gone2.py`",
            "```",
            "",
            "    12:30 2026-12-04 abcdef12 7 SOL",
            "",
            "`12:31` `abcdef13` `2026-12-05` `3 SOL` and [kept](https://example.com/x.md).",
        ]
    )
    doc = Doc.parse("docs/sample.md", sample)
    assert [f.split(": ", 1)[1] for f in issue_numbers(doc)] == ["Issue 20", "issue 3"]
    assert times_of_day(doc) == ["docs/sample.md:3: 10:55"]
    assert dates(doc) == ["docs/sample.md:3: 2026-12-03", "docs/sample.md:3: 1 December"]
    assert commits_and_branches(doc) == [
        "docs/sample.md:3: commit hash? 1d89912",
        "docs/sample.md:3: this branch",
    ]
    assert measured_figures(doc) == ["docs/sample.md:4: 0.41 SOL", "docs/sample.md:4: 39 minutes"]
    assert broken_links(doc) == [
        "docs/sample.md:5: no such file: nowhere.md",
        "docs/sample.md:5: no such heading: #nothing",
    ]
    assert stale_names(doc) == [
        "docs/sample.md:5: no such path: `scripts/gone.py`",
        "docs/sample.md:6: no such name: `program.no_such_module`",
        "docs/sample.md:7: no such name: `curta_chain.constants.NO_SUCH_CONSTANT`",
    ]
