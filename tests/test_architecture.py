"""The layers of the package: imports flow one way, folders show the layers, and importing the package stays light."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "skgpsearch"

#: Layers, lowest first (docs/architecture.md). A module may import its own layer and the ones below.
LAYERS = [
    ("grammar", "datasets"),
    ("kernels",),
    ("_engine",),
    ("criteria",),
    ("_search",),
    ("inspection",),
    ("_estimators",),
    ("_cli", "__init__", "__main__"),
]
LAYER_OF = {name: rank for rank, names in enumerate(LAYERS) for name in names}
#: The order inside the folders whose modules build on each other, lowest first (the same rule applies).
SUBLAYERS = {
    "_search": [
        ("_records", "_progress", "_starts", "_diagnostics", "_models"),
        ("_candidate_fitter",),
        ("_exact_fitter", "_sparse_fitter", "_laplace_fitter"),
        ("_loop", "_warping_decision"),
        ("_pipeline",),
        ("_regression", "_classification"),
        ("__init__",),
    ],
    "_estimators": [("_validation",), ("_warping", "_decimal_years"), ("_base",), ("_regressor", "_classifier", "_kernel_search_cv"), ("__init__",)],
}


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules():
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _runtime_nodes(tree):
    """Every node of the tree except those under ``if TYPE_CHECKING:`` (imports for annotations only)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _imports(name, path, modules, annotations=False):
    """The package modules that ``name`` imports, at module level or inside functions.

    With ``annotations``, also those imported for annotations only (``if TYPE_CHECKING:``).
    """
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    tree = ast.parse(path.read_text())
    for node in (ast.walk(tree) if annotations else _runtime_nodes(tree)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # "from package import submodule" depends on the submodule
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def _graph(annotations=False):
    modules = _modules()
    return {name: _imports(name, path, modules, annotations) for name, path in modules.items()}


def _layer(module):
    parts = module.split(".")
    part = parts[1] if len(parts) > 1 else "__init__"
    return LAYER_OF[part]


def _sublayer(module):
    """(folder, rank inside it) of a module in a folder of SUBLAYERS, else None."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] not in SUBLAYERS:
        return None
    name = parts[2] if len(parts) > 2 else "__init__"
    for rank, names in enumerate(SUBLAYERS[parts[1]]):
        if name in names:
            return parts[1], rank
    raise KeyError(module)


def test_every_module_has_a_layer():
    unknown = {m for m in _modules() if (m.split(".") + ["__init__"])[1] not in LAYER_OF}
    assert not unknown, f"add these modules to LAYERS (and to docs/architecture.md): {sorted(unknown)}"
    unplaced = []
    for module in _modules():
        try:
            _sublayer(module)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, f"add these modules to SUBLAYERS (and to docs/architecture.md): {sorted(unplaced)}"


def test_imports_go_to_the_same_or_a_lower_layer():
    upward = [(m, t) for m, targets in _graph(annotations=True).items() for t in targets if _layer(t) > _layer(m)]
    assert not upward, f"imports against the layer order: {upward}"


def test_folders_keep_their_inner_order():
    upward = []
    for module, targets in _graph(annotations=True).items():
        own = _sublayer(module)
        for target in targets:
            other = _sublayer(target)
            if own and other and own[0] == other[0] and other[1] > own[1]:
                upward.append((module, target))
    assert not upward, f"imports against the order inside a folder: {upward}"


def test_estimators_import_no_engine_module():
    # the model fitters of skgpsearch._search own the engines: not even a lazy or annotation-only import
    engine = [(m, t) for m, targets in _graph(annotations=True).items() if m.startswith("skgpsearch._estimators")
              for t in targets if t.startswith("skgpsearch._engine")]
    assert not engine, f"estimators importing engine modules: {engine}"


def test_the_import_graph_has_no_cycle():
    # annotation-only imports count too: they are cycles for type checkers and readers
    graph = _graph(annotations=True)
    state = {}

    def visit(node, path):
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                pytest.fail("import cycle: " + " -> ".join(path[path.index(target):] + [target]))
            if target not in state:
                visit(target, path + [target])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_the_checker_sees_a_cycle_and_an_upward_import():
    # the checks above must be able to fail: inspection importing an estimator is both
    modules = _modules()
    modules_graph = _graph()
    modules_graph["skgpsearch.inspection._decompose"] = modules_graph["skgpsearch.inspection._decompose"] | {
        "skgpsearch._estimators._regressor"}
    assert "skgpsearch._estimators._regressor" in modules
    assert _layer("skgpsearch._estimators._regressor") > _layer("skgpsearch.inspection._decompose")
    assert _sublayer("skgpsearch._search._pipeline")[1] > _sublayer("skgpsearch._search._loop")[1]
    reachable, frontier = set(), ["skgpsearch._estimators._regressor"]
    while frontier:
        node = frontier.pop()
        for target in modules_graph[node]:
            if target not in reachable:
                reachable.add(target)
                frontier.append(target)
    assert "skgpsearch._estimators._regressor" in reachable
    # the estimators reach the engine only through skgpsearch._search
    graph = _graph(annotations=True)
    assert "skgpsearch._engine._exact" in graph["skgpsearch._search._models"]


def test_importing_the_package_loads_no_heavy_optional_module():
    # (pandas is not checked: scikit-learn itself imports it when it is installed; matplotlib is imported by the
    # plots only, not by skgpsearch.inspection)
    code = ("import sys, skgpsearch, skgpsearch.inspection; "
            "print(sorted(m for m in ('sklearn.ensemble', 'matplotlib', 'dask') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
