"""No function or method in the answer's own layers (``chains/``, ``grounding/``) is over
:data:`MAX_LINES` lines (issue #34): each step of the spine reads in one screen."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from tests.helpers import parse_python

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("chains", "grounding")
MAX_LINES = 60  # from ``def`` (decorators excluded) to the last line of the body


def long_functions(source: str, max_lines: int = MAX_LINES) -> list[tuple[str, int]]:
    """``(qualified name, lines)`` of every function in ``source`` longer than ``max_lines``;
    nested functions count on their own and within the function that holds them."""
    out: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = (child.end_lineno or child.lineno) - child.lineno + 1
                    if lines > max_lines:
                        out.append((name, lines))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(parse_python(source), "")
    return out


def test_the_check_finds_a_long_function_and_passes_a_short_one() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))  # with its def: one too many
    assert long_functions(f"def long():\n{body}") == [("long", MAX_LINES + 1)]
    method = "class C:\n" + textwrap.indent(f"async def long(self):\n{body}", "    ")
    assert long_functions(method) == [("C.long", MAX_LINES + 1)]
    assert long_functions(f"def short():\n{body.split(chr(10), 1)[1]}") == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_over_the_limit(package: str) -> None:
    found = [
        f"{path.relative_to(REPO)}:{name} ({lines} lines)"
        for path in sorted((REPO / package).rglob("*.py"))
        for name, lines in long_functions(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"functions over {MAX_LINES} lines:\n" + "\n".join(found)
