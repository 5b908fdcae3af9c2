"""No circle in the package's import graph, nor between the program's C files.

The Python graph is built statically from every module of ``curta_chain``: each ``import``
and ``from ... import`` anywhere in a module (at the top, inside a function, under
``TYPE_CHECKING``) is an arrow to what it names. ``import a.b`` names module ``a.b``;
``from a import b`` names ``a.b`` when that is a module, and always the package ``a`` too
(Python runs ``a/__init__.py`` and reads ``b`` from it), so a package whose ``__init__``
gathers its submodules must not be imported by name from one of them. Relative imports are
resolved first.

The C graph draws an arrow from a source to every other source whose functions it calls,
and from a header to every header it includes.
"""

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROGRAM = REPO / "programs" / "curta"


def modules_of(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Map each module of ``package`` (under ``root``) to its file and whether it is a package."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Return each module's arrows to the modules of ``package`` it imports, as said above."""
    modules = modules_of(root, package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        here = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                graph[name] |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom):
                source = node.module or ""
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - node.level + 1]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                if source in modules:
                    graph[name].add(source)
                graph[name] |= {
                    f"{source}.{alias.name}"
                    for alias in node.names
                    if f"{source}.{alias.name}" in modules
                }
    return graph


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Return the graph's circles: each strongly connected set of two or more, or a self-arrow."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the graphs are a few hundred nodes
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1 or node in graph[node]:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_imports_in_one_direction():
    graph = import_graph(REPO, "curta_chain")
    assert len(graph) > 100 and "curta_chain.localnet.persistence" in graph
    assert circles(graph) == []


def test_every_kind_of_import_is_an_arrow(tmp_path: Path):
    """The graph sees the imports a circle hides in: in functions, typing-only, by package."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from pkg.a import A\n")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\nA = 1\n"
    )
    (package / "b.py").write_text("def f():\n    from . import a\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "c.py").write_text("from .. import a\nimport pkg.b\nfrom pkg import d\n")
    (package / "d.py").write_text("from pkg.sub import c\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph == {
        "pkg": {"pkg.a"},
        "pkg.a": {"pkg.b"},
        "pkg.b": {"pkg", "pkg.a"},
        "pkg.sub": set(),
        "pkg.sub.c": {"pkg", "pkg.a", "pkg.b", "pkg.d"},
        "pkg.d": {"pkg.sub", "pkg.sub.c"},
    }
    assert circles(graph) == [["pkg", "pkg.a", "pkg.b"], ["pkg.d", "pkg.sub.c"]]


def _without_comments(source: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", source, flags=re.S)


def c_call_graph(folder: Path) -> dict[str, set[str]]:
    """Return each C source's arrows to the other sources whose functions it calls."""
    texts = {path.name: _without_comments(path.read_text()) for path in folder.glob("*.c")}
    definition = re.compile(r"^(?!static\b)[A-Za-z_][\w \t*]*?\b(\w+)\([^;{)]*\)\s*\{", re.M)
    defined_in = {
        function: name for name, text in texts.items() for function in definition.findall(text)
    }
    return {
        name: {
            defined_in[function]
            for function in set(re.findall(r"\b(\w+)\(", text)) & defined_in.keys()
            if defined_in[function] != name
        }
        for name, text in texts.items()
    }


def test_the_program_sources_call_in_one_direction():
    graph = c_call_graph(PROGRAM / "src")
    assert "sample.c" in graph["forward.c"] and "entrypoint.c" not in graph["step.c"]
    assert circles(graph) == []


def test_the_program_headers_include_in_one_direction():
    include = re.compile(r'^#include "(?:\.\./)?(\w+\.h)"', re.M)
    graph = {path.name: set(include.findall(path.read_text())) for path in PROGRAM.glob("*.h")}
    assert "layout.h" in graph["inference.h"]
    assert circles(graph) == []


def test_the_c_graph_sees_a_call_back(tmp_path: Path):
    (tmp_path / "a.c").write_text("int f(void) {\n  return g();\n}\n")
    (tmp_path / "b.c").write_text(
        "/* f( is only named here */\nstatic int h(void) { return 1; }\n"
        "int g(void) {\n  return h() + f();\n}\n"
    )
    assert circles(c_call_graph(tmp_path)) == [["a.c", "b.c"]]
