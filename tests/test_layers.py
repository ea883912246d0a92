"""Data flows one way: each layer imports only from the layers below it (docs/design.md).

settings (config, errors, offline env) < ingest < indexing < retrievers < grounding < llms
< chains < eval < bench < app (bench reads eval's question files; the CLI and the chat sit on top)

A layer may also be narrower than its place: ``llms`` (the chat models) imports ``settings`` only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import parse_python

REPO = Path(__file__).resolve().parents[1]
LAYERS: dict[str, int] = {
    "settings": 0,
    "ingest": 1,
    "indexing": 2,
    "retrievers": 3,
    "grounding": 4,  # evidence sentences and the support check, used by the chains
    "llms": 5,  # the chat models and their capability flags, run by the chains
    "chains": 6,
    "eval": 7,
    "bench": 8,
    "app": 9,
}
# Layers that may import only some of the layers below them.
ONLY: dict[str, set[str]] = {
    "llms": {"settings"},  # a model backend knows nothing of PubMed, its index or its evidence
}


def project_imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of every import of a project package in the file, including
    imports inside functions."""
    out = []
    for node in ast.walk(parse_python(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out.extend((node.lineno, n.split(".")[0]) for n in names if n.split(".")[0] in LAYERS)
    return out


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_each_layer_imports_only_from_below(package: str) -> None:
    files = sorted((REPO / package).rglob("*.py"))
    assert files, f"no modules in {package}/"
    upward = [
        f"{f.relative_to(REPO)}:{line} imports {target}"
        for f in files
        for line, target in project_imports(f)
        if LAYERS[target] > LAYERS[package]
        or (LAYERS[target] == LAYERS[package] and target != package)
    ]
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


@pytest.mark.parametrize("package", sorted(ONLY))
def test_narrow_layers_import_only_what_they_name(package: str) -> None:
    files = sorted((REPO / package).rglob("*.py"))
    assert files, f"no modules in {package}/"
    other = [
        f"{f.relative_to(REPO)}:{line} imports {target}"
        for f in files
        for line, target in project_imports(f)
        if target != package and target not in ONLY[package]
    ]
    assert not other, f"{package}/ may import only {sorted(ONLY[package])}:\n" + "\n".join(other)


def test_every_package_has_a_layer() -> None:
    """A package missing from LAYERS would go unchecked, and so would every import of it."""
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")} - {"tests"}
    assert packages == set(LAYERS)


def module_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (anywhere in the file, ``TYPE_CHECKING`` too);
    ``from a.b import c`` counts as importing ``a.b.c`` when that is a module, else ``a.b``."""
    modules = {
        ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): p
        for package in LAYERS
        for p in (REPO / package).rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(parse_python(path)):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def test_no_import_circle() -> None:
    """No module imports, directly or through others, a module that imports it back (a package's
    ``__init__`` re-exporting its modules is the package, not a circle)."""
    graph = module_graph()
    circles: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph[module]):
            if target in path:
                cycle = path[path.index(target) :]
                pairs = zip(cycle, cycle[1:] + cycle[:1], strict=True)
                if not any(a.startswith(b + ".") or b.startswith(a + ".") for a, b in pairs):
                    circles.append(cycle)
            elif target not in done:
                visit(target, [*path, target])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)
