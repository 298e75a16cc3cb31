"""The package's layout: no module imports a module that imports it back.

An import cycle makes the result depend on which module a user imports first, and a reader
cannot take the modules in order. Imports inside functions (the lazy ones) count too: they
run later, but they tie the modules together all the same. Imports under ``TYPE_CHECKING``
never run and do not count, except that a package's lazily exported names (``_lazy``) count
as imports of the modules that define them. ``from package import submodule`` counts as
importing the submodule only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import four

SOURCE = Path(four.__file__).parent.parent


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in SOURCE.joinpath("four").rglob("*.py"):
        parts = list(path.relative_to(SOURCE).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


MODULES = _modules()


def _type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _import_nodes(body: list[ast.stmt], deep: bool) -> list[ast.Import | ast.ImportFrom]:
    """The imports outside ``TYPE_CHECKING``: those run at import time (in the module's
    own blocks), or with ``deep`` every one at any depth (in functions too)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if _type_checking(node):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif deep or isinstance(node, (ast.If, ast.Try, ast.With)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    found += _import_nodes([child], deep)
                elif isinstance(child, ast.ExceptHandler):
                    found += _import_nodes(child.body, deep)
    return found


def _lazy_names(name: str) -> dict[str, str]:
    """A package's lazily exported names and the modules that define them."""
    path, package = MODULES[name]
    text = path.read_text()
    if not package or "lazy(" not in text:
        return {}
    return {
        alias.asname or alias.name: node.module
        for branch in ast.parse(text).body
        if _type_checking(branch)
        for node in branch.body  # type: ignore[attr-defined]
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


LAZY = {name: _lazy_names(name) for name in MODULES}


def _imports(name: str, ever: bool = False) -> set[str]:
    path, package = MODULES[name]
    here = name if package else name.rpartition(".")[0]
    targets: set[str] = set()
    body = ast.parse(path.read_text()).body
    for node in _import_nodes(body, deep=ever):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            parts = here.split(".")[: len(here.split(".")) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        submodules = {f"{base}.{alias.name}" for alias in node.names} & MODULES.keys()
        if ever and LAZY.get(base):  # a lazy name: an import of the module defining it
            lazy = {LAZY[base][a.name] for a in node.names if a.name in LAZY[base]}
            submodules |= lazy
            if len(submodules) == len(node.names):
                targets |= submodules
                continue
        targets |= submodules if len(submodules) == len(node.names) else {base} | submodules
    return {target for target in targets if target in MODULES and target != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_module_imports_itself_back() -> None:
    graph = {name: _imports(name) for name in MODULES}
    assert _cycles(graph) == []


def test_no_module_imports_itself_back_even_from_a_function() -> None:
    graph = {name: _imports(name, ever=True) for name in MODULES}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_four_functions_and_the_domains_each_have_their_folder() -> None:
    packages = {name for name, (_, package) in MODULES.items() if package}
    assert {"four.invoke", "four.parse", "four.execute", "four.trajectory"} <= packages
    assert {"four.domains.notebook", "four.domains.python", "four.domains.cli"} <= packages
