"""The package's layers hold: each part imports only the parts below it, and no
module imports itself back through others (lazy imports inside functions count).

    trust  <-  site  <-  publish  <-  build  <-  commands

Each sub-package's `__init__` docstring says what it owns and what it may import;
this test is that rule, checked."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "generator"
LAYERS = ("trust", "site", "publish", "build", "commands")
ALLOWED = {layer: set(LAYERS[: i + 1]) for i, layer in enumerate(LAYERS)}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every `generator` module that `path` imports, at the top or inside a function."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("generator"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("generator"):
                continue
            found.add(target)
            # `from . import layout` names a module, not an attribute
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                if modules().get(candidate):
                    found.add(candidate)
    found.discard(name)
    return {m for m in found if m in modules()}


_MODULES: dict[str, Path] = {}


def modules() -> dict[str, Path]:
    if not _MODULES:
        _MODULES.update({module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))})
    return _MODULES


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_every_module_lives_in_a_layer() -> None:
    loose = [
        m
        for m in modules()
        if layer_of(m) is None
        and m not in ("generator", "generator.__main__")
        and not m.startswith("generator.data")
    ]
    assert loose == [], f"modules outside trust/site/publish/build/commands: {loose}"


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_the_layers_below_it(layer: str) -> None:
    wrong = [
        f"{module} imports {target}"
        for module, path in modules().items()
        if layer_of(module) == layer
        for target in sorted(imported_modules(path))
        if (layer_of(target) or layer) not in ALLOWED[layer]
    ]
    assert wrong == [], "\n".join(wrong)


def test_nothing_imports_the_commands() -> None:
    wrong = [
        f"{module} imports {target}"
        for module, path in modules().items()
        if layer_of(module) not in ("commands", None)
        for target in imported_modules(path)
        if layer_of(target) == "commands"
    ]
    assert wrong == []


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle in `graph` as the list of its modules, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_module_imports_itself_back() -> None:
    graph = {module: imported_modules(path) for module, path in modules().items()}
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The check above could pass on a broken finder: it must see a planted cycle."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
