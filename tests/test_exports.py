"""Every package says what it exports (``__all__``), and says all of it (as httpx tests).

A package's ``__all__`` names the objects it offers; the chain package, whose operations
live in modules named for them (``publish.publish``), offers its modules. Either way the
list is complete: a public name defined in the package and missing from ``__all__`` fails,
and so does a name in ``__all__`` that does not resolve.
"""

import importlib
import pkgutil
import types

import pytest

import curta_chain

PACKAGES = sorted(
    ["curta_chain"]
    + [
        info.name
        for info in pkgutil.walk_packages(curta_chain.__path__, "curta_chain.")
        if info.ispkg
    ]
)


def submodules(package: types.ModuleType) -> set[str]:
    return {
        info.name
        for info in pkgutil.iter_modules(package.__path__)
        if not info.name.startswith("_")
    }


@pytest.mark.parametrize("name", PACKAGES)
def test_the_package_exports_all_it_offers(name: str):
    package = importlib.import_module(name)
    exported = getattr(package, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
    for member in exported:
        if not hasattr(package, member) and member in submodules(package):
            importlib.import_module(f"{name}.{member}")
        assert hasattr(package, member), f"{name}.__all__ names {member}, which is not there"
    defined_here = {
        member
        for member, value in vars(package).items()
        if not member.startswith("_")
        and not isinstance(value, types.ModuleType)
        and getattr(value, "__module__", "").startswith(name)
    }
    assert defined_here <= set(exported), (
        f"{name}.__all__ lacks {sorted(defined_here - set(exported))}"
    )
    if exported and set(exported) <= submodules(package):  # a package of modules
        assert submodules(package) <= set(exported), (
            f"{name}.__all__ lacks the modules {sorted(submodules(package) - set(exported))}"
        )
