"""The cached test index (tests/conftest.py) is rebuilt whenever code that builds it changes: its
key hashes ``INDEX_CODE``, which must name every project module indexing/build.py imports."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import INDEX_CODE, REPO
from tests.helpers import parse_python

BUILD = "indexing.build"
_TYPE_CHECKING = {"TYPE_CHECKING", "typing.TYPE_CHECKING"}


def _project_packages() -> set[str]:
    return {
        p.name
        for p in REPO.iterdir()
        if p.is_dir() and (p / "__init__.py").is_file() and p.name != "tests"
    }


def _module_file(module: str) -> Path | None:
    base = REPO.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_modules(path: Path, package: str, project: set[str]) -> set[str]:
    """Project modules ``path`` imports anywhere (top level or inside functions); ``from a.b
    import c`` counts ``a.b`` and, when it is a module, ``a.b.c``. Imports under ``if
    TYPE_CHECKING:`` never run (annotations only), so they cannot change what is built."""
    names: set[str] = set()
    tree = parse_python(path)
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) in _TYPE_CHECKING
        for stmt in node.body  # the else branch runs
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's own package upwards
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return {n for n in names if n.split(".")[0] in project and _module_file(n) is not None}


def build_closure(root: str = BUILD) -> dict[str, Path]:
    """``root`` and every project module it imports, transitively: module name -> file."""
    project = _project_packages()
    seen: dict[str, Path] = {}
    todo = [root]
    while todo:
        module = todo.pop()
        path = _module_file(module)
        if module in seen or path is None:
            continue
        seen[module] = path
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        todo.extend(_imported_modules(path, package, project))
    return seen


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _only_a_docstring(path: Path) -> bool:
    body = parse_python(path).body
    return all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)


def test_the_closure_is_found() -> None:
    """The parser itself works: build.py's known direct and indirect imports are found."""
    closure = {_rel(p) for p in build_closure().values()}
    assert {"indexing/build.py", "indexing/bm25.py", "indexing/phrases.py"} <= closure
    assert "indexing/phrases.py" not in {
        _rel(p) for p in build_closure("indexing.tokenize").values()
    }


def test_index_code_names_every_module_the_index_build_imports() -> None:
    closure = {_rel(p) for p in build_closure().values()}
    missing = sorted(closure - set(INDEX_CODE))
    assert not missing, (
        f"tests/conftest.py INDEX_CODE lacks {missing}: indexing/build.py imports them, so a "
        "change there would not rebuild the cached test index"
    )


def test_index_code_names_only_files_that_exist() -> None:
    assert all((REPO / rel).is_file() for rel in INDEX_CODE)


def test_packages_on_the_way_run_no_code() -> None:
    """Importing ``indexing.bm25`` runs ``indexing/__init__.py`` too: it is not hashed, so it must
    stay a docstring (or be added to INDEX_CODE)."""
    packages = {
        REPO.joinpath(*module.split(".")[:depth]) / "__init__.py"
        for module in build_closure()
        for depth in range(1, module.count(".") + 1)
    }
    running = sorted(
        _rel(p) for p in packages if not _only_a_docstring(p) and _rel(p) not in INDEX_CODE
    )
    assert not running, f"package __init__ files with code, not in INDEX_CODE: {running}"
