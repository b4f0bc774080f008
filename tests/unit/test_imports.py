"""The package's import graph (issue 44): no import circle, and no module reaching into
another's private names.

A circle (even one closed by an import inside a function) means two modules can be neither read
nor changed apart; a private name taken from another module is an interface nobody declared.
The graph is read from the source with :mod:`ast`, so every import counts, wherever it sits.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import dsbra

PACKAGE = Path(dsbra.__file__).parent


def module_files(package: Path) -> dict[str, tuple[Path, bool]]:
    """Every module of ``package``: dotted name -> (file, whether it is a package's __init__)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    if not node.level:
        return node.module
    base = module.split(".")[: None if is_package else -1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(package: Path) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """(module -> the package's modules it imports, [(module, other module, private name)])."""
    modules = module_files(package)
    root = package.name

    def owner(name: str) -> str:
        while name not in modules:
            name = name.rpartition(".")[0]
        return name

    edges: dict[str, set[str]] = {m: set() for m in modules}
    private: list[tuple[str, str, str]] = []
    for module, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        module_aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == root:
                        edges[module].add(owner(alias.name))
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(module, is_package, node)
                if not source or source.split(".")[0] != root:
                    continue
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    if submodule in modules:
                        edges[module].add(submodule)
                        module_aliases[alias.asname or alias.name] = submodule
                        continue
                    edges[module].add(owner(source))
                    if _is_private(alias.name):
                        private.append((module, source, alias.name))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in module_aliases and _is_private(node.attr)):
                private.append((module, module_aliases[node.value.id], node.attr))
        edges[module].discard(module)
    return edges, private


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def first_circle(edges: dict[str, set[str]]) -> list[str] | None:
    try:
        graphlib.TopologicalSorter(edges).prepare()
    except graphlib.CycleError as err:
        return err.args[1]
    return None


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded into the root's packages (``dsbra.daemon`` for every module under
    it; a module of the root is its own node): which packages import which."""
    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    folded: dict[str, set[str]] = {package(m): set() for m in edges}
    for module, imported in edges.items():
        folded[package(module)] |= {package(i) for i in imported} - {package(module)}
    return folded


def test_dsbra_has_no_import_circle():
    edges, _ = import_graph(PACKAGE)
    assert first_circle(edges) is None, " -> ".join(first_circle(edges))


def test_no_two_packages_of_dsbra_import_each_other():
    """A package that imports a second which imports it back cannot be read apart from it either,
    even when no two modules form a circle (cluster's CLI and conf's values did until 2026-11-29)."""
    circle = first_circle(package_graph(import_graph(PACKAGE)[0]))
    assert circle is None, " -> ".join(circle)


def test_no_module_of_dsbra_imports_another_modules_private_name():
    _, private = import_graph(PACKAGE)
    assert private == [], "\n".join(f"{m} uses {src}.{name}" for m, src, name in private)


def test_the_check_finds_a_circle_closed_inside_a_function_and_a_private_reach(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import a\n    return a\n")
    (pkg / "c.py").write_text("from pkg.a import _hidden\nfrom pkg.sub import b\nb._inner()\n")
    edges, private = import_graph(pkg)
    assert sorted(first_circle(edges)[:-1]) == ["pkg.a", "pkg.sub.b"]
    assert private == [("pkg.c", "pkg.a", "_hidden"), ("pkg.c", "pkg.sub.b", "_inner")]
    (pkg / "sub" / "b.py").write_text("def f():\n    return 1\n")
    assert first_circle(import_graph(pkg)[0]) is None
    # no module circle, but the packages pkg.a and pkg.sub import each other
    (pkg / "sub" / "d.py").write_text("from pkg import a\n")
    edges = import_graph(pkg)[0]
    assert first_circle(edges) is None
    assert sorted(first_circle(package_graph(edges))[:-1]) == ["pkg.a", "pkg.sub"]
