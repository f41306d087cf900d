"""The attributes each op takes come from the C++ op list (src/ops/ops.def, op_attrs.def): the
Python op surface reads them (``_core.op_attrs``), so a keyword an op does not take is a
CompileError at the keyword that lists the ones it does."""

import numpy as np
import pytest

import ptox
import ptox.lang as pl
from ptox import _core


def test_op_attrs_are_the_op_lists():
    assert [a["name"] for a in _core.op_attrs("tensor.sum")] == ["axis", "keepdims"]
    assert [a["kind"] for a in _core.op_attrs("tensor.sum")] == ["int", "bool"]
    (fmt,) = _core.op_attrs("tensor.qmatmul")
    assert fmt["kind"] == "string" and {"q4_0", "q8_0"} <= set(fmt["values"])
    assert [a["values"] for a in _core.op_attrs("tensor.allreduce")] == [["sum", "max"]]
    # fuse-tiles' mark is in the table (the text form round-trips it) but no keyword.
    assert [(a["name"], a["pass_mark"]) for a in _core.op_attrs("tile.load")] == \
        [("pad", False), ("fused", True)]
    assert _core.op_attrs("tensor.add") == [] and _core.op_attrs("no.such_op") == []


def jit_error(fn):
    with pytest.raises(ptox.CompileError) as e:
        ptox.jit(fn)(np.ones((4, 8), np.float32))
    return str(e.value)


def test_a_keyword_the_op_does_not_take_lists_those_it_does():
    def f(x: pl.In[4, 8, pl.f32]) -> pl.Out[4, pl.f32]:
        return pl.sum(x, axis=-1, keepdim=False)

    message = jit_error(f)
    assert "pl.sum takes no keyword keepdim= (it takes axis=, keepdims=)" in message, message
    assert "test_op_attrs.py:" in message, message

    def g(x: pl.In[4, 8, pl.f32]) -> pl.Out[4, 8, pl.f32]:
        return pl.exp(x, fused=True)

    message = jit_error(g)
    assert "pl.exp takes no keyword fused= (it takes none)" in message, message
