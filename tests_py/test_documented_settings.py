"""Every dump name and every `nvfuse...set_*` setting the docs name is
accepted: the docs cannot promise a name the code refuses."""

import glob
import importlib
import os
import re

import pytest

import nvfuse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _docs_text():
    paths = glob.glob(os.path.join(ROOT, "docs", "*.md")) + [os.path.join(ROOT, "README.md")]
    return "\n".join(open(p, encoding="utf-8").read() for p in paths)


def _documented_dump_names():
    text = _docs_text()
    names = set()
    for listed in re.findall(r"NVFUSE_DUMP=([a-z_,]+)", text):
        names.update(n for n in listed.split(",") if n)
    for listed in re.findall(r"\| `NVFUSE_DUMP` \| `([a-z_,]+)`", text):
        names.update(listed.split(","))
    return sorted(names)


def _documented_settings():
    return sorted(set(re.findall(r"nvfuse((?:\.[a-z_]+)*)\.(set_[a-z_]+)", _docs_text())))


def test_the_docs_name_dump_options():
    assert {"segments", "dynamo", "cuda_kernel"} <= set(_documented_dump_names())


@pytest.mark.parametrize("name", _documented_dump_names())
def test_a_documented_dump_name_is_accepted(name):
    before = nvfuse.get_dump()
    try:
        nvfuse.set_dump(name)
        assert nvfuse.get_dump() == [name]
    finally:
        nvfuse.set_dump(before)


@pytest.mark.parametrize("module, setting", _documented_settings())
def test_a_documented_setting_exists(module, setting):
    owner = importlib.import_module("nvfuse" + module)
    assert callable(getattr(owner, setting))
