"""Issue 36: no class in the core (src/agentchemist) has more than 25 methods. A class that large is doing
several jobs; split it into collaborators named for them (LabTwin's parts in sim/, the store's reads)."""
import ast

from tests.conftest import REPO

CORE = REPO / "src" / "agentchemist"
MAX_METHODS = 25


def method_counts(source: str) -> dict[str, int]:
    """Methods defined in each class's own body (properties and dunders included; inherited ones are
    the base's), by class name (nested classes as Outer.Inner)."""
    counts: dict[str, int] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                name = prefix + node.name
                counts[name] = sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in node.body)
                visit(node.body, name + ".")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(node.body, prefix + node.name + ".")

    visit(ast.parse(source).body, "")
    return counts


def test_no_core_class_has_more_than_25_methods():
    files = sorted(CORE.rglob("*.py"))
    assert files, f"no Python files under {CORE}: the check would pass vacuously"
    offenders = {f"{path.relative_to(REPO)}::{name}": n for path in files
                 for name, n in method_counts(path.read_text()).items() if n > MAX_METHODS}
    assert offenders == {}


def test_method_count_sees_properties_dunders_and_nested_classes():
    source = (
        "class Big:\n"
        "    x = 1\n"
        "    def __init__(self): pass\n"
        "    @property\n"
        "    def p(self): return 1\n"
        "    async def a(self): pass\n"
        "    class Inner:\n"
        "        def f(self): pass\n"
        "def factory():\n"
        "    class Local:\n"
        + "".join(f"        def m{i}(self): pass\n" for i in range(MAX_METHODS + 1))
    )
    counts = method_counts(source)
    assert counts == {"Big": 3, "Big.Inner": 1, "factory.Local": MAX_METHODS + 1}
