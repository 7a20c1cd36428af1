"""The type stub of the C++ module (nvfuse/_C.pyi, with py.typed) names
what the module has: regenerate it with tools/generate_stubs.sh after
changing the bindings."""

import ast
from pathlib import Path

import nvfuse
from nvfuse import _C

PACKAGE = Path(nvfuse.__file__).parent


def _stub_names():
    tree = ast.parse((PACKAGE / "_C.pyi").read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")
    }


def test_the_package_is_typed():
    assert (PACKAGE / "py.typed").exists()


def test_the_stub_names_every_public_function_and_class_of_the_module():
    # Only what the C++ module defines: nvfuse.as_nvfuser() also hangs the
    # Python handle classes on it, for clients that look for them there.
    public = {
        name
        for name in dir(_C)
        if not name.startswith("_")
        and getattr(getattr(_C, name), "__module__", "nvfuse._C") == "nvfuse._C"
    }
    assert public == _stub_names()
