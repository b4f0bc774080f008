"""The scripts in benchmarks/ are drivers over dsbra (issue 44): none changes ``sys.path`` and
none imports another script. Code two scripts (or a test) share lives in the package, where it
is imported like any other, so a script runs from any directory and no script's command line
becomes another's interface. Read from the source with :mod:`ast`: imports inside functions
count too."""

from __future__ import annotations

import ast

import pytest
from repo_scripts import ROOT

SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))
NAMES = {p.stem for p in SCRIPTS}


def is_sys_path(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def offences(path) -> list[str]:
    """Each ``sys.path`` change and each import of a sibling script in the file, by line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name.split(".")[0] in NAMES]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module.split(".")[0] in NAMES:
            found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Attribute) and is_sys_path(node.value):
            found.append((node.lineno, f"sys.path.{node.attr}"))
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [(node.lineno, "sys.path assigned") for t in targets if is_sys_path(t)]
    return [f"line {line}: {what}" for line, what in sorted(found)]


def test_there_are_scripts_to_check():
    assert {"run_bench_matrix", "compare_sim_real", "container_grants"} <= NAMES


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_script_neither_changes_sys_path_nor_imports_another_script(script):
    assert offences(script) == []


def test_the_check_sees_both(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nsys.path.insert(0, '.')\n\n\ndef f():\n    from run_sim_matrix import VARIANTS\n"
                   "    import container_grants\n    sys.path += ['x']\n")
    assert offences(bad) == ["line 2: sys.path.insert", "line 6: from run_sim_matrix import ...",
                             "line 7: import container_grants", "line 8: sys.path assigned"]
