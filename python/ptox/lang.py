"""The ptox kernel language in Python (``import ptox.lang as pl``).

A function decorated ``@ptox.jit`` is compiled from its Python AST — not traced — into the same IR
the text form produces: Python ``for`` / ``if`` over symbolic values become IR loops and ifs.

    @ptox.jit
    def rmsnorm(x: pl.In["N", 64, pl.f32], w: pl.In[64, pl.f32]) -> pl.Out["N", 64, pl.f32]:
        return pl.rmsnorm(x, w, eps=1e-6)

Parameters: ``pl.In[dims..., dtype]``, ``pl.Out[...]``, ``pl.InOut[...]`` (a dim is an int or a
symbol's name), scalars ``pl.index`` / ``pl.i32`` / ``pl.f32``. A return annotation adds outputs
(``out``, or ``out0``, ``out1``, ... for a tuple) that ``return`` stores. The op surface is
generated from the C++ op list (src/ops/ops.def): ``pl.<name>`` is ``tensor.<name>`` at tensor
level, ``pl.tile.<name>`` is ``tile.<name>``.
"""

import ast
import builtins
import inspect
import numbers
import operator
import re
import sys

from . import _core
from . import errors


class DType:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"pl.{self.name}"


f32, f16, bf16, i8, i32, i64, index = (DType(n) for n in
                                       ("f32", "f16", "bf16", "i8", "i32", "i64", "index"))
bool_ = DType("bool")
_DTYPES = {d.name: d for d in (f32, f16, bf16, i8, i32, i64, index, bool_)}


class TensorType:
    """A parameter's type: direction, dims (ints or symbol names) and dtype."""

    def __init__(self, direction, dims, dtype):
        self.direction, self.dims, self.dtype = direction, dims, dtype

    def text(self):
        dims = "x".join(f"{{{d}}}" if isinstance(d, str) else str(d) for d in self.dims)
        return f"tensor<{dims + 'x' if dims else ''}{self.dtype.name}>"


class _Direction:
    def __init__(self, name):
        self.name = name

    def __getitem__(self, spec):
        spec = spec if isinstance(spec, tuple) else (spec,)
        *dims, dtype = spec
        if not isinstance(dtype, DType) or not all(isinstance(d, (int, str)) for d in dims):
            raise errors.CompileError(f"pl.{self.name.capitalize()}[dims..., dtype]: dims are ints "
                                      f"or symbol names, the last item a pl dtype; got {spec!r}")
        return TensorType(self.name, list(dims), dtype)


In, Out, InOut = _Direction("in"), _Direction("out"), _Direction("inout")

# Comparisons of compile-time constants, evaluated when the program is compiled.
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}

_OPS = _core.op_names()
TENSOR_OPS = sorted(n[len("tensor."):] for n in _OPS if n.startswith("tensor."))
TILE_OPS = sorted(n[len("tile."):] for n in _OPS if n.startswith("tile."))
DIST_OPS = sorted(n[len("dist."):] for n in _OPS if n.startswith("dist."))


def _marker(name):
    def call(*args, **kwargs):
        raise errors.CompileError(f"pl.{name} is part of the kernel language: call it inside an "
                                  "@ptox.jit function")
    call.__name__ = name
    return call


class _Namespace:
    pass


# pl.<op> for every tensor op, pl.tile.<op> for every tile op, pl.dist.<op> for the ranks of a
# distributed run (generated from ops.def), and the statements of the language. Outside
# @ptox.jit they only raise.
for _name in TENSOR_OPS:
    globals()[_name] = _marker(_name)
tile = _Namespace()
for _name in TILE_OPS:
    setattr(tile, _name, _marker("tile." + _name))
dist = _Namespace()
for _name in DIST_OPS:
    setattr(dist, _name, _marker("dist." + _name))
range = _marker("range")  # noqa: A001 - the language's loop, as Triton's tl.range
incore = _marker("incore")
load = _marker("load")
store = _marker("store")
full = _marker("full")

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
# On integer scalars arith.div is floor division: `/` and `//` both name it.
_ARITH_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
                 ast.FloorDiv: "div", ast.Mod: "rem"}
_COMPARES = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
             ast.GtE: "ge"}


class _Value:
    """An SSA value of the function being built: its %name and its kind."""

    def __init__(self, name, kind):
        self.name, self.kind = name, kind  # kind: "tensor", "tile" or "scalar"

    def __str__(self):
        return "%" + self.name


class _Builder(ast.NodeVisitor):
    """Walks one function's AST and writes its .pto text, remembering for every line the Python
    position it came from (CompileError messages point at the Python source)."""

    def __init__(self, fn, filename, constants, module, name=None):
        self.fn, self.filename = fn, filename
        self.module = module  # the program's functions: the helpers this one calls
        self.func_name = name or fn.__name__
        self.helper = name is not None  # a function called by another: returns its values
        self.results = []  # a helper's result types (its return statement's)
        self.incore = False  # an incore function: the inside of its callers' incore scopes
        self.returned = False  # a helper's return is written: the statements after it are not
        self.in_incore = 0  # depth of `with pl.incore()` blocks around the current statement
        self.directions = {}  # tensor parameter -> its direction
        self.constants = dict(constants)  # compile-time names: immediates wherever they appear
        # body line number (1-based; 0: the func header) -> the Python "file:line:col" that
        # wrote it; text line k is body line k - 1
        self.lines, self.line_map = [], {}
        self.env, self.names, self.depth = {}, set(), 1
        self.closers = []  # what closes each open block, for the type probe (type_of)
        self.globals = {**fn.__globals__, **self.constants}
        self.outputs = []
        self.types = {}  # value name -> type text, as the verifier infers it (see type_of)
        self.symbol_dims = {}  # symbol name -> (parameter, axis) of its first use in a parameter
        self.memo = {}  # id(AST node) -> its value (see expr)

    # ---- errors and text ----------------------------------------------------------------------
    def where(self, node):
        # Nodes carry the positions they have in the file (see _function_ast).
        return f"{self.filename}:{node.lineno}:{node.col_offset + 1}"

    def fail(self, node, message):
        raise errors.CompileError(f"{self.where(node)}: error: {message}")

    def emit(self, node, text):
        """Writes a line of text made by `node` (a block's closing brace and its yields: the
        block's statement), so every line an error may name has a Python position."""
        self.lines.append("  " * self.depth + text)
        self.line_map[len(self.lines)] = self.where(node)

    def fresh(self, hint):
        base = hint if hint.isidentifier() else "t"
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    # ---- the signature ------------------------------------------------------------------------
    def signature(self, node):
        self.line_map[0] = self.where(node)  # the func header: an error there is the def's
        extra = node.args.posonlyargs + node.args.kwonlyargs + [
            a for a in (node.args.vararg, node.args.kwarg) if a is not None]
        if extra:  # they were dropped: the kernel then failed at a use, 'not defined here'
            self.fail(extra[0], f"parameter '{extra[0].arg}': a kernel's parameters are plain "
                                "positional ones (no *args, **kwargs, / or *)")
        params = []
        for a in node.args.args:
            if a.annotation is None:
                self.fail(a, f"parameter '{a.arg}' needs a type: pl.In[dims..., dtype], pl.Out"
                             "[...], pl.InOut[...], or a scalar pl.index / pl.i32 / pl.f32")
            t = self.annotation(a.annotation)
            self.names.add(a.arg)
            if isinstance(t, TensorType):
                self.param(a.arg, t.text(), t.direction, params)
            else:
                self.param(a.arg, t.name, "in", params)
        if node.returns is not None:
            ret = node.returns
            items = ret.elts if isinstance(ret, ast.Tuple) else [ret]
            for k, item in enumerate(items):
                t = self.annotation(item)
                if not isinstance(t, TensorType) or t.direction != "out":
                    self.fail(item, "a return annotation is pl.Out[dims..., dtype] (or a tuple)")
                name = self.fresh("out" if len(items) == 1 else f"out{k}")
                params.append(f"%{name}: out {t.text()}")
                self.outputs.append(name)
        return params

    def param(self, name, type_text, direction, params):
        """Declares parameter %name of this type (tensor<...>, tile<...> or a dtype)."""
        kind = type_text.split("<")[0] if "<" in type_text else "scalar"
        if kind == "tensor":
            dims, _ = _parse_type(type_text)
            for axis, d in enumerate(dims):
                if isinstance(d, str):
                    self.symbol_dims.setdefault(d, (name, axis))
            self.directions[name] = direction
        params.append(f"%{name}: {direction} {type_text}")
        self.types[name] = type_text
        self.env[name] = _Value(name, kind)

    def helper_signature(self, node, args):
        """The parameters of a helper called with `args`, one (kind, value) per parameter: a
        ("const", v) parameter is the compile-time constant v in the body, a ("value", type,
        direction) one a parameter of the function, of its annotation's type when it has one
        (the call is checked against it), else of the argument's."""
        self.line_map[0] = self.where(node)
        params = []
        for a, (kind, *arg) in zip(node.args.args, args):
            self.names.add(a.arg)
            if kind == "const":
                self.constants[a.arg] = self.globals[a.arg] = arg[0]
                continue
            type_text, direction = arg
            if a.annotation is not None:
                t = self.annotation(a.annotation)
                if isinstance(t, TensorType):
                    type_text, direction = t.text(), t.direction
                else:
                    type_text = t.name
            self.param(a.arg, type_text, direction if type_text.startswith("tensor") else "in",
                       params)
        return params

    def annotation(self, node):
        try:
            value = eval(compile(ast.Expression(node), self.filename, "eval"), self.globals)
        except Exception as e:  # noqa: BLE001 - any failure is the user's annotation
            self.fail(node, f"cannot evaluate the annotation: {e}")
        if not isinstance(value, (TensorType, DType)):
            self.fail(node, f"an annotation is pl.In / pl.Out / pl.InOut[...] or a pl dtype, got "
                            f"{value!r}")
        return value

    # ---- statements ---------------------------------------------------------------------------
    def body(self, stmts):
        for s in stmts:
            if self.returned:  # a helper's return in an arm an if over a constant kept
                break
            self.stmt(s)

    def stmt(self, s):
        if isinstance(s, ast.Assign):
            target = s.targets[0] if len(s.targets) == 1 else None
            if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
                values = self.expr(s.value, hint=target.elts[0].id)
                if not isinstance(values, tuple) or len(values) != len(target.elts):
                    self.fail(s, f"unpacks {len(target.elts)} names from a value that is not "
                                 f"a call returning {len(target.elts)} values")
                for e, v in zip(target.elts, values):
                    self.env[e.id] = v
                return
            if not isinstance(target, ast.Name):
                self.fail(s, "assign to one name (x = ...), or unpack a call's results (a, b = f(x))")
            value = self.expr(s.value, hint=target.id)
            if isinstance(value, tuple):
                self.fail(s, f"the call returns {len(value)} values: unpack them "
                             f"({', '.join(['x'] * len(value))} = ...)")
            if value is None:
                self.fail(s.value, "the function returns no value")
            self.env[target.id] = value
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return  # a docstring
            self.expr(s.value, statement=True)
        elif isinstance(s, ast.Return):
            self.ret(s)
        elif isinstance(s, ast.For):
            self.loop(s)
        elif isinstance(s, ast.While):
            self.while_(s)
        elif isinstance(s, ast.With):
            self.with_(s)
        elif isinstance(s, ast.If):
            self.if_(s)
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, (ast.Break, ast.Continue)):
            word = type(s).__name__.lower()
            self.fail(s, f"`{word}` is not supported: a ptox loop runs the trip count its "
                         "pl.range gives, a while loop until its condition fails (compute the "
                         "count first, put the exit into the while's condition, or guard the rest "
                         "of the body with an if over a scalar)")
        else:
            self.fail(s, f"{type(s).__name__} statements are not part of the ptox language (it has "
                         "assignments, return, for over pl.range, while, if, with pl.incore())")

    def while_(self, s):
        """`while c:` over a scalar condition: sequential. As in a for loop, names defined before
        the loop and assigned in its body are carried (the condition and the body read the
        current trip's values) and after the loop the name is the loop's result."""
        if s.orelse:
            self.fail(s, "a while loop has no else")
        static = self.const(s.test)
        if static is None and isinstance(s.test, ast.BoolOp):  # a constant term may decide it
            terms = [self.const(v) for v in s.test.values]
            decides = isinstance(s.test.op, ast.Or)  # `True or x` holds, `False and x` fails
            if any(t is not None and bool(t) == decides for t in terms):
                static = decides
        if static is not None:
            if static:
                self.fail(s.test, "this while's condition is a constant that holds: ptox has no "
                                  "break, so the loop would never end (loop over a scalar the "
                                  "body changes)")
            return  # never runs
        carried = [n for n in _assigned(s.body) if n in self.env]
        bind, params, results, head = self.carry(carried, "while")
        self.emit(s, head + " {")
        yield_line = ("yield " + ", ".join(str(p) for p in params) + "\n" if carried else "")
        # The type probe closes a partial condition block with a condition of its own.
        probe = self.fresh("probe_cond")
        self.closers.append(f"%{probe} = arith.eq 0, 0\ncondition %{probe}\n}} do {{\n"
                            + yield_line + "}")
        saved = dict(self.env)
        self.env.update(bind)
        self.depth += 1
        test = s.test
        if isinstance(test, ast.BoolOp):  # its constant terms do not decide it (above): drop them
            rest = [v for v in test.values if self.const(v) is None]
            if len(rest) == 1:
                test = rest[0]
        cond = self.operand(test)
        if cond.startswith("%") and self.type_of(s.test, cond) not in (None, "bool"):
            self.fail(s.test, f"the condition of a while is a bool scalar (a comparison), not "
                              f"{self.type_of(s.test, cond)}")
        self.emit(s, "condition " + cond)
        self.depth -= 1
        self.env = saved
        self.closers.pop()
        self.emit(s, "} do {")
        self.loop_body(s, bind, carried, params, results)

    def ret(self, s):
        if self.helper:
            return self.helper_return(s)
        if s.value is None:
            return
        values = s.value.elts if isinstance(s.value, ast.Tuple) else [s.value]
        if len(values) != len(self.outputs):
            self.fail(s, f"return gives {len(values)} values, the return annotation declares "
                         f"{len(self.outputs)}")
        for v, name in zip(values, self.outputs):
            self.emit(s, f"tensor.store {self.operand(v)}, %{name}")

    def helper_return(self, s):
        """`return a, b` of a helper: the function's results, typed by the values."""
        if self.depth != 1:
            self.fail(s, "a function called from a kernel returns at the level of its body, not "
                         "inside a loop, an incore scope or an if over a run-time value (its "
                         "calls are inlined)")
        self.returned = True
        values = [] if s.value is None else (
            s.value.elts if isinstance(s.value, ast.Tuple) else [s.value])
        operands = [self.operand(v) for v in values]
        for v, o in zip(values, operands):
            c = self.const(v)
            self.results.append(self.type_of(v, o) if c is None else
                                "f32" if isinstance(c, float) else "index")
        self.emit(s, "return " + ", ".join(operands))

    def loop(self, s):
        call = s.iter
        if not (isinstance(call, ast.Call) and self.is_lang(call.func, "range")):
            self.fail(s, "loops are `for i in pl.range(lo, hi, step, parallel=...)`")
        if not isinstance(s.target, ast.Name) or s.orelse:
            self.fail(s, "a loop binds one name and has no else")
        args = [self.operand(a) for a in call.args]
        if not 1 <= len(args) <= 3:
            self.fail(call, "pl.range(hi), pl.range(lo, hi) or pl.range(lo, hi, step)")
        lo, hi, step = (["0"] + args + ["1"])[:3] if len(args) == 1 else (args + ["1"])[:3]
        kind = ""
        for kw in call.keywords:
            if kw.arg not in ("parallel", "unroll"):
                self.fail(kw, f"pl.range takes parallel= and unroll=, not {kw.arg}=")
            flag = self.const(kw.value)
            if flag is None:  # a run-time value cannot choose how the loop is compiled
                self.fail(kw.value, f"{kw.arg}= takes a compile-time constant (True / False)")
            if flag:
                kind = f" {kw.arg}"
        iv = self.fresh(s.target.id)
        # Names defined before the loop and assigned in its body are carried: iteration k reads
        # what iteration k - 1 assigned (an IR iter argument), and after the loop the name is
        # the loop's result.
        carried = [n for n in _assigned(s.body) if n in self.env and n != s.target.id]
        bind, params, results, head = self.carry(carried,
                                                 f"for %{iv} = {lo} to {hi} step {step}{kind}")
        bind[s.target.id] = _Value(iv, "scalar")
        self.emit(s, head + " {")
        self.loop_body(s, bind, carried, params, results)

    def carry(self, carried, head):
        """The loop-carried values of the names `carried`: the body's binding of each to its
        iter argument, the arguments, the loop's results and the loop's first line
        (`%r = <head> iter(%x = init)`)."""
        bind, inits, params, results = {}, [], [], []
        for n in carried:
            inits.append(str(self.env[n]))
            params.append(_Value(self.fresh(n), self.env[n].kind))
            bind[n] = params[-1]
            results.append(_Value(self.fresh(n), self.env[n].kind))
        if carried:
            head = (", ".join(str(r) for r in results) + " = " + head + " iter(" +
                    ", ".join(f"{p} = {i}" for p, i in zip(params, inits)) + ")")
        return bind, params, results, head

    def loop_body(self, s, bind, carried, params, results):
        """A loop's body, closed by the yield of the carried names' last values; after it, each
        name is the loop's result."""
        self.closers.append(("yield " + ", ".join(str(p) for p in params) + "\n" if carried
                             else "") + "}")
        yields = self.scoped(s.body, bind, carried)
        self.closers.pop()
        if carried:
            self.emit(s, "  yield " + ", ".join(yields))
        self.emit(s, "}")
        for n, r in zip(carried, results):
            self.env[n] = r

    def scoped(self, stmts, bind=None, carried=()):
        """A nested block: names assigned inside are not seen after it. Returns the values the
        `carried` names have at its end."""
        saved = dict(self.env)
        self.env.update(bind or {})
        self.depth += 1
        self.body(stmts)
        self.depth -= 1
        out = [str(self.env[n]) for n in carried]
        for n in _assigned(stmts):
            if n in saved and n not in carried:
                node = next(t for st in stmts for a in ast.walk(st) if isinstance(a, ast.Assign)
                            for t in a.targets if isinstance(t, ast.Name) and t.id == n)
                self.fail(node, f"'{n}' is defined before this block and assigned in it: only a "
                                "pl.range loop carries values out (an if or incore body cannot)")
        self.env = saved
        return out

    def with_(self, s):
        if len(s.items) != 1 or not (isinstance(s.items[0].context_expr, ast.Call) and
                                     self.is_lang(s.items[0].context_expr.func, "incore")):
            self.fail(s, "the only with-statement is `with pl.incore():`")
        self.emit(s, "incore {")
        self.closers.append("}")
        self.in_incore += 1
        self.scoped(s.body)
        self.in_incore -= 1
        self.closers.pop()
        self.emit(s, "}")

    def if_(self, s):
        """`if c:` over a scalar. Names defined before the if and assigned in an arm, or assigned
        in both arms, are its results: each arm yields its value (an arm that does not assign a
        name yields the value from before the if). The result types are the then-arm's values'
        types, known only once that arm is written: until the if is complete its header and the
        then-arm's yield stay drafts the type probe reads without results."""
        static = self.const(s.test)
        if static is None and isinstance(s.test, ast.BoolOp):  # a constant term may decide it
            terms = [self.const(v) for v in s.test.values]
            decides = isinstance(s.test.op, ast.Or)  # `True or x` holds, `False and x` fails
            if any(t is not None and bool(t) == decides for t in terms):
                static = decides
        if static is not None:  # over a compile-time constant: only the arm taken is compiled
            self.body(s.body if static else s.orelse)
            return
        test = s.test
        if isinstance(test, ast.BoolOp):  # its constant terms do not decide it (above): drop them
            rest = [v for v in test.values if self.const(v) is None]
            if len(rest) == 1:
                test = rest[0]
        cond = self.operand(test)
        then_names, else_names = _assigned(s.body), _assigned(s.orelse)
        results = [n for n in then_names + [n for n in else_names if n not in then_names]
                   if n in self.env or (n in then_names and n in else_names)]
        indent = "  " * self.depth
        head = len(self.lines)
        self.emit(s, f"if {cond} {{")
        self.closers.append("}")
        then_vals, then_types = self.arm(s, s.body, results, typed=True)
        then_yield = len(self.lines) - 1
        if s.orelse or results:
            self.emit(s, "} else {")
            else_vals, _ = self.arm(s, s.orelse, results)
        else_yield = len(self.lines) - 1
        self.closers.pop()
        self.emit(s, "}")
        if not results:
            return
        values = [_Value(self.fresh(n), v.kind) for n, v in zip(results, then_vals)]
        self.lines[head] = (f"{indent}{', '.join(map(str, values))} = if {cond} -> "
                            f"{', '.join(then_types)} {{")
        self.lines[then_yield] = indent + "  yield " + ", ".join(map(str, then_vals))
        self.lines[else_yield] = indent + "  yield " + ", ".join(map(str, else_vals))
        for n, v in zip(results, values):
            self.env[n] = v

    def arm(self, node, stmts, results, typed=False):
        """One arm of an if with `results`: its statements, then `yield` of the values the
        result names have at its end; returns them and their types."""
        saved = dict(self.env)
        self.depth += 1
        self.body(stmts)
        vals = [self.env.get(n) for n in results]
        if None in vals:
            self.fail(node, f"'{results[vals.index(None)]}' is assigned in only one arm of this "
                            "if and not defined before it")
        types = [self.type_of(node, str(v)) for v in vals] if typed else None
        if results:
            self.emit(node, "")  # the yield: if_ writes it once the header has its results
        self.depth -= 1
        self.env = saved
        return vals, types

    # ---- expressions --------------------------------------------------------------------------
    def is_lang(self, node, name):
        """Whether `node` names pl.<name> (name may be dotted: "tile.exp")."""
        return self.lang_name(node) == name

    def lang_name(self, node):
        """"exp" for pl.exp, "tile.exp" for pl.tile.exp (pl: this module under any name)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and self.globals.get(node.id) is sys.modules[__name__]:
            return ".".join(reversed(parts))
        return None

    def const(self, node):
        """The value of a compile-time constant expression (a bool, int or float), else None:
        literals, names of constants= or of the module's globals (`NEG = -1e30` at module
        level), attributes and calls over them (`math.inf`, `float("-inf")`, `math.sqrt(D)`),
        and the folds below."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            found, value = self.global_value(node)
            return _number(value) if found else None
        if isinstance(node, ast.BinOp):  # `1.0 / math.sqrt(D)`, `D // 2`
            a = self.const(node.left)
            b = self.const(node.right) if a is not None else None
            return _fold(node.op, a, b) if b is not None else None
        if isinstance(node, ast.BoolOp):  # `A or B` over compile-time constants
            values = [self.const(v) for v in node.values]
            decides = isinstance(node.op, ast.Or)  # the value of one term that decides it
            if any(v is not None and bool(v) == decides for v in values):
                return decides  # `TP > 1 and n > 8` at TP = 1, whatever n is
            if all(v is not None for v in values):
                return not decides
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            values = [self.const(v) for v in [node.left, *node.comparators]]  # `TP > 1`
            if all(v is not None for v in values):
                return all(_COMPARE[type(op)](a, b)
                           for op, a, b in zip(node.ops, values, values[1:]))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = self.const(node.operand)
            if v is not None:
                return not v
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.const(node.operand)
            if v is not None and not isinstance(v, bool):
                return -v
        return None

    def global_value(self, node):
        """(True, value) for an expression the function reads from outside itself, evaluated
        now, when the program is compiled: a name not bound in the function (constants= first,
        then the function's globals, then builtins), an attribute or a constant subscript of
        one (`math.pi`, `cfg.EPS`, `SIZES[1]`), or a call of float / int / abs or a math
        function over constants (`float("-inf")`, `math.sqrt(D)`). (False, None) when it reads
        the function's own values or is no such expression."""
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return False, None
            if node.id in self.constants:
                return True, self.constants[node.id]
            if node.id in self.local_names:  # a local of the function, not yet assigned here
                return False, None
            if node.id in self.fn.__globals__:
                return True, self.fn.__globals__[node.id]
            if hasattr(builtins, node.id):
                return True, getattr(builtins, node.id)
            return False, None
        if isinstance(node, ast.Attribute):
            found, base = self.global_value(node.value)
            if not found or base is sys.modules[__name__]:  # pl.<op> is the language
                return False, None
            try:
                return True, getattr(base, node.attr)
            except AttributeError:
                self.fail(node, f"'{ast.unparse(node.value)}' has no attribute '{node.attr}'")
        if isinstance(node, ast.Subscript):
            found, base = self.global_value(node.value)
            if not found or not isinstance(base, (tuple, list)):
                return False, None
            key = self.const(node.slice)
            if key is None:
                return False, None
            try:
                return True, base[key]
            except (IndexError, TypeError) as e:
                self.fail(node, f"cannot evaluate {ast.unparse(node)}: {e}")
        if isinstance(node, ast.Call):
            found, fn = self.global_value(node.func)
            if not found or not _constant_function(fn) or node.keywords:
                return False, None
            args = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str)
                    else self.const(a) for a in node.args]  # float("-inf") takes a string
            if None in args:
                return False, None
            try:
                return True, fn(*args)
            except (ValueError, TypeError, OverflowError) as e:
                self.fail(node, f"cannot evaluate {ast.unparse(node)}: {e}")
        return False, None

    def not_a_value(self, node):
        """Fails for a name (or attribute) of a global that is no int, float or bool constant:
        the program cannot hold it, so say which name it is and what it holds."""
        found, value = self.global_value(node)
        if found and _number(value) is None:
            self.fail(node, f"'{ast.unparse(node)}' is a global {type(value).__name__}, not a "
                            "compile-time constant: @ptox.jit reads int, float and bool globals "
                            "(and constants=) as immediates when it compiles; pass other values "
                            "as parameters")

    def constant(self, node, what):
        """An attribute's value: a literal, or a constant expression of the function's globals
        (`-math.inf`, `float("inf")`, a module-level EPS)."""
        value = self.const(node)
        if value is None and isinstance(node, ast.Constant):
            value = node.value
        if value is None:
            try:
                value = eval(compile(ast.Expression(node), self.filename, "eval"), self.globals)
            except Exception:  # noqa: BLE001 - reported below as not a constant
                value = None
        if not isinstance(value, (bool, int, float, str)):
            self.fail(node, f"{what}= takes a constant")
        return value

    def operand(self, node):
        """An operand's text: an immediate or a %value."""
        c = self.const(node)
        if c is not None:
            if isinstance(c, bool):
                return "1" if c else "0"
            return repr(float(c)) if isinstance(c, float) else str(c)
        return str(self.expr(node))

    def op(self, node, name, operands, attrs=None, type_text=None, hint="t", result=True):
        attr = ""
        if attrs:
            try:
                attr = " {" + ", ".join(f"{k} = {_attr(v)}" for k, v in attrs.items()) + "}"
            except errors.CompileError as e:
                self.fail(node, str(e))
        ty = f" : {type_text}" if type_text else ""
        if not result:
            self.emit(node, f"{name} {', '.join(operands)}{attr}{ty}")
            return None
        value = _Value(self.fresh(hint), "tile" if name.startswith("tile.") else
                       "scalar" if name.startswith("arith.") else "tensor")
        self.emit(node, f"%{value.name} = {name} {', '.join(operands)}{attr}{ty}")
        return value

    def kind_of(self, node):
        c = self.const(node)
        if c is not None:
            return "imm"
        return self.expr(node).kind

    def expr(self, node, hint="t", statement=False):
        """The value of an expression, translated once: kind_of and operand may both ask for
        the same node, and emitting it twice would compute it twice (dce keeps ops that can
        fail, so a duplicate matmul would run)."""
        key = id(node)
        if key not in self.memo:
            self.memo[key] = self.translate(node, hint, statement)
        return self.memo[key]

    def translate(self, node, hint, statement):
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                self.not_a_value(node)
                if self.const(node) is not None:
                    self.fail(node, "a constant is an operand of an op here, not a value of its "
                                    "own")
                self.fail(node, f"'{node.id}' is not defined here (names assigned in a loop, if or "
                                "incore body are not seen after it)")
            return self.env[node.id]
        if isinstance(node, ast.BinOp):
            return self.binop(node, hint)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            x = self.expr(node.operand)
            if x.kind == "scalar":
                return self.op(node, "arith.sub", ["0", str(x)], hint=hint)
            return self.op(node, f"{x.kind}.neg", [str(x)], hint=hint)
        if isinstance(node, ast.Compare):
            return self.compare(node, hint)
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and
                node.value.attr == "shape"):  # x.shape[d]: the size of a dim, at run time
            d = self.const(node.slice)
            if not isinstance(d, int):
                self.fail(node, "x.shape[d] takes a constant dim")
            return _Value(self.op(node, "tensor.dim", [str(self.expr(node.value.value)), str(d)],
                                  hint=hint).name, "scalar")
        if isinstance(node, ast.Attribute) and node.attr == "T":
            x = self.expr(node.value)
            if x.kind == "tile":
                return self.op(node, "tile.transpose", [str(x)], hint=hint)
            return self.op(node, "tensor.transpose", [str(x)], hint=hint)
        if isinstance(node, ast.Call):
            return self.call(node, hint, statement)
        if self.const(node) is not None:
            self.fail(node, "a constant is an operand of an op here, not a value of its own")
        if isinstance(node, ast.Attribute):
            self.not_a_value(node)
        self.fail(node, f"{type(node).__name__} expressions are not part of the ptox language")

    def binop(self, node, hint):
        if isinstance(node.op, ast.MatMult):
            a, b = self.expr(node.left), self.expr(node.right)
            return self.op(node, f"{a.kind}.matmul", [str(a), str(b)], hint=hint)
        kinds = {self.kind_of(node.left), self.kind_of(node.right)}
        level = "tensor" if "tensor" in kinds else "tile" if "tile" in kinds else "arith"
        table = _ARITH_BINOPS if level == "arith" else _BINOPS
        if type(node.op) not in table:
            self.fail(node, f"operator {type(node.op).__name__} is not defined on {level} values")
        return self.op(node, f"{level}.{table[type(node.op)]}",
                       [self.operand(node.left), self.operand(node.right)], hint=hint)

    def compare(self, node, hint):
        if len(node.ops) != 1:
            self.fail(node, "chained comparisons are not part of the language: use two")
        kinds = {self.kind_of(node.left), self.kind_of(node.comparators[0])}
        level = "tensor" if "tensor" in kinds else "tile" if "tile" in kinds else "arith"
        op = f"{level}.{_COMPARES[type(node.ops[0])]}"
        if op not in _OPS:
            self.fail(node, f"{op} is no ptox op: compare tiles inside pl.incore()")
        return self.op(node, op,
                       [self.operand(node.left), self.operand(node.comparators[0])], hint=hint)

    def call(self, node, hint, statement):
        name = self.lang_name(node.func)
        if name is None:
            found, callee = self.global_value(node.func)
            fn = getattr(callee, "__ptox_function__", None) if found else None
            if fn is None:
                self.fail(node, "only pl.* ops and @ptox.jit / @ptox.inline functions can be "
                                "called inside @ptox.jit")
            return self.call_function(node, fn, hint)
        attrs, type_text = {}, None
        for kw in node.keywords:
            if kw.arg in ("shape", "dtype"):
                continue
            attrs[kw.arg] = self.constant(kw.value, kw.arg)
        if name in ("load", "store", "full"):
            return self.tile_memory(node, name, attrs, hint)
        if name.startswith("tile.") or name.startswith("dist."):
            op = name
        elif name in TENSOR_OPS:
            op = "tensor." + name
        else:
            self.fail(node, f"pl.{name} is no ptox op (tensor ops: pl.<name>, tile ops: "
                            "pl.tile.<name>, distributed ops: pl.dist.<name>; see docs/ops.md)")
        self.check_attrs(node, name, op, attrs)
        dtype = self.keyword(node, "dtype")
        shape = self.keyword(node, "shape")
        if op == "tensor.cast" and node.args and self.kind_of(node.args[0]) == "scalar":
            if dtype is None:
                self.fail(node, "pl.cast(scalar, dtype=...) needs dtype=")
            return self.op(node, "arith.cast", [self.operand(node.args[0])], type_text=dtype.name,
                           hint=hint)
        if (op in ("tensor.min", "tensor.max") and len(node.args) == 2
                and all(self.kind_of(a) in ("scalar", "imm") for a in node.args)):
            return self.op(node, "arith." + op[len("tensor."):],
                           [self.operand(a) for a in node.args], hint=hint)
        if op == "tile.extract":  # pl.tile.extract(t, [r, c]): one element as a scalar
            if len(node.args) != 2:
                self.fail(node, "pl.tile.extract(tile, [row, col])")
            v = _Value(self.fresh(hint), "scalar")
            self.emit(node, f"%{v.name} = tile.extract {self.operand(node.args[0])}"
                            f"[{self.offsets(node.args[1])}]")
            return v
        if op == "tile.broadcast":  # pl.tile.broadcast(t, shape=(R, C))
            if len(node.args) != 1 or shape is None:
                self.fail(node, "pl.tile.broadcast(tile, shape=(rows, cols))")
            x = self.operand(node.args[0])
            return self.op(node, op, [x], type_text=self.result_type(node, op, [x], shape, dtype),
                           hint=hint)
        if op == "tile.assemble":  # pl.tile.assemble(dst, src, [row, col])
            if len(node.args) != 3:
                self.fail(node, "pl.tile.assemble(dst, src, [row, col])")
            dst, src = self.operand(node.args[0]), self.operand(node.args[1])
            v = _Value(self.fresh(hint), "tile")
            self.emit(node, f"%{v.name} = tile.assemble {dst}, {src}[{self.offsets(node.args[2])}]")
            return v
        if op in ("tensor.slice", "tile.slice"):  # pl.slice(x, [offsets...], shape=(...))
            if len(node.args) != 2 or shape is None:
                self.fail(node, f"pl.{name}(x, [offsets...], shape=(sizes...))")
            x = self.operand(node.args[0])
            type_text = self.result_type(node, op, [x], shape, dtype)
            v = _Value(self.fresh(hint), op.split(".")[0])
            self.emit(node, f"%{v.name} = {op} {x}[{self.offsets(node.args[1])}] : {type_text}")
            return v
        if op == "tensor.concat":
            return self.concat(node, attrs, shape, dtype, hint)
        operands = [self.operand(a) for a in node.args]
        if op == "tensor.empty" and not operands and shape is not None:
            operands = self.symbol_sizes(node, shape)
        if op in ("tensor.cast", "tile.cast", "tensor.reshape", "tile.reshape", "tensor.empty"):
            type_text = self.result_type(node, op, operands, shape, dtype)
        no_result = op in ("tensor.store", "tile.store") or (
            op.startswith("dist.") and op not in ("dist.rank", "dist.world_size"))
        if op in ("dist.rank", "dist.world_size"):  # index scalars
            return _Value(self.op(node, op, operands, hint=hint).name, "scalar")
        return self.op(node, op, operands, attrs, type_text, hint, result=not no_result)

    def call_function(self, node, fn, hint):
        """A call of another function of the program: `call @f(...)`, the function written once
        per kind of arguments (compile-time constants, and the types of the values) and inlined
        by the compiler. Its result: None, one value, or a tuple of them."""
        if node.keywords:
            self.fail(node.keywords[0], f"{fn.__name__}: pass arguments by position")
        params = _function_ast(fn)[0].args.args
        if len(node.args) != len(params):
            self.fail(node, f"{fn.__name__} takes {len(params)} arguments, got {len(node.args)}")
        args, operands = [], []
        for a in node.args:
            c = self.const(a)
            if c is not None:
                args.append(("const", c))
                continue
            v = self.expr(a)
            direction = "in" if self.directions.get(v.name) == "in" else "inout"
            args.append(("value", self.type_of(a, str(v)), direction))
            operands.append(str(v))
        incore = self.incore or self.in_incore > 0  # called inside an incore scope
        try:
            name, results = self.module.function(fn, args, self.constants, incore)
        except errors.CompileError as e:
            raise errors.CompileError(_called_at(str(e), fn.__name__, self.where(node))) from None
        values = [_Value(self.fresh(hint if len(results) == 1 else f"{hint}{k}"),
                         t.split("<")[0] if "<" in t else "scalar") for k, t in enumerate(results)]
        head = ", ".join(str(v) for v in values) + " = " if values else ""
        self.emit(node, f"{head}call @{name}({', '.join(operands)})")
        for v, t in zip(values, results):
            if "{" not in t:  # a symbolic type names the callee's symbols: the probe's has ours
                self.types[v.name] = t
        if not values:
            return None
        return values[0] if len(values) == 1 else tuple(values)

    def check_attrs(self, node, name, op, attrs):
        """Keywords other than shape= / dtype= are the op's attributes, as the C++ op list
        declares them (src/ops/op_attrs.def): one the op does not take fails at the keyword,
        naming those it does (pass marks such as fused= are not offered)."""
        takes = [a["name"] for a in _core.op_attrs(op) if not a["pass_mark"]]
        for kw in node.keywords:
            if kw.arg in attrs and kw.arg not in takes:
                self.fail(kw, f"pl.{name} takes no keyword {kw.arg}= (it takes "
                              f"{', '.join(k + '=' for k in takes) if takes else 'none'})")

    def concat(self, node, attrs, shape, dtype, hint):
        """pl.concat(a, b, ..., axis=-1), or over a list as np.concatenate([a, b], axis=...).
        Along an axis that is symbolic in an operand the IR writes the result's type, whose
        size there is a symbol: shape= names it (`shape=("S", 64)`: bound to the sum of the
        sizes, or checked against the size S has in scope, as a parameter's); without shape=
        it is the symbol `N_plus_M` (of the operands' sizes there), the same for every concat
        of the same sizes, so their results combine."""
        args = node.args
        if len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
            args = args[0].elts
        if not args:
            self.fail(node, "pl.concat(a, b, ..., axis=-1) takes the tensors to join")
        operands = [self.operand(a) for a in args]
        if dtype is not None and shape is None:
            self.fail(node, "pl.concat's dtype is its operands': dtype= only goes with shape=")
        if shape is not None:
            type_text = self.result_type(node, "tensor.concat", operands, shape, dtype)
        else:
            type_text = self.concat_type(node, operands, attrs.get("axis", -1))
        return self.op(node, "tensor.concat", operands, attrs, type_text, hint)

    def concat_type(self, node, operands, axis):
        """The result type of a concat without shape=: None (the IR infers it) unless the axis
        is symbolic in an operand, then the operands' type with the symbol `A_plus_B` there."""
        types = [self.type_of(node, o) for o in operands]
        if None in types or not isinstance(axis, int):
            return None  # an immediate or a bad axis: the verifier says what is wrong
        shapes = [_parse_type(t) for t in types]
        dims, dtype = shapes[0]
        if not -len(dims) <= axis < len(dims):
            return None
        sizes = [d[axis] if -len(d) <= axis < len(d) else None for d, _ in shapes]
        if None in sizes or not any(isinstance(n, str) for n in sizes):
            return None
        symbol = "_plus_".join(str(n) for n in sizes)
        while symbol in self.symbol_dims:  # a parameter's symbol has its own size
            symbol += "_"
        dims = list(dims)
        dims[axis] = symbol
        return _type_text("tensor", dims, dtype)

    def symbol_sizes(self, node, shape):
        """pl.empty(shape=("N", 8)) without sizes: each symbol's size from a parameter it sizes
        (tensor.dim), so that an empty tensor can take a parameter's symbolic dims."""
        sizes = []
        for d in shape:
            if not isinstance(d, str):
                continue
            if d not in self.symbol_dims:
                self.fail(node, f"pl.empty: no parameter has the dim '{d}'; pass the sizes of "
                                "its symbolic dims first: pl.empty(n, shape=(...), dtype=...)")
            param, axis = self.symbol_dims[d]
            sizes.append(str(self.op(node, "tensor.dim", [f"%{param}", str(axis)], hint=d)))
        return sizes

    def keyword(self, node, name):
        for kw in node.keywords:
            if kw.arg == name:
                if name == "dtype":
                    d = self.annotation(kw.value)
                    if not isinstance(d, DType):
                        self.fail(kw, "dtype= takes a pl dtype")
                    return d
                try:  # literals, and names of compile-time constants
                    value = eval(compile(ast.Expression(kw.value), self.filename, "eval"),
                                 self.globals)
                except Exception:  # noqa: BLE001 - reported below
                    value = None
                if not (isinstance(value, (tuple, list)) and
                        all(isinstance(d, (int, str)) for d in value)):
                    self.fail(kw, f"{name}= takes a tuple of ints (and symbol names)")
                return tuple(value)
        return None

    def result_type(self, node, op, operands, shape, dtype):
        """The result type an op that does not infer it writes: from shape= and dtype=, the rest
        from the operand's type as the verifier inferred it."""
        level = op.split(".")[0]
        if shape is None or dtype is None:
            src = self.type_of(node, operands[0]) if operands else None
            if src is None:
                self.fail(node, f"{op} needs shape= and dtype=")
            src_dims, src_dtype = _parse_type(src)
            shape = src_dims if shape is None else list(shape)
            dtype = dtype or _DTYPES[src_dtype]
        return _type_text(level, shape, dtype.name)

    def type_of(self, node, operand):
        """The verifier's type of %value: a parameter's from its annotation, else parse what was
        written so far, closed (and remember every type that parse gives: SSA values keep their
        types, so each value is probed at most once)."""
        name = operand.lstrip("%")
        if name not in self.types:
            try:
                program = _core.Program.parse(self.module.text + self.text(closing=True), _PROBE)
                self.types.update(program.value_types(self.func_name))
            except errors.Error as e:
                self.probe_failed(node, str(e))
        return self.types.get(name)

    def probe_failed(self, node, message):
        """The type probe found an error in the text written so far. It lies in an op written
        before `node` (a whole-dim pl.slice with an offset, say), so report it at the Python
        position of the line it names, not at `node`, and with no position of the text left
        in it (those are line numbers of the generated IR)."""
        first = _PROBE_POSITION.search(message)
        where = self.text_position(int(first.group(1))) if first else None
        message = _PROBE_POSITION.sub(lambda m: self.text_position(int(m.group(1))) or
                                      self.where(node), message)
        if where is not None and message.startswith(where):
            raise errors.CompileError(message)
        self.fail(node, f"cannot type the operand: {message}")

    def text_position(self, line):
        """The Python file:line:col that wrote line `line` of the probe's text (the helpers',
        then this function's, whose line 1 is the header: the def), or None past its end (the
        closers the probe adds)."""
        if line <= self.module.lines:
            return self.module.line_map.get(line - 1)
        return self.line_map.get(line - 1 - self.module.lines)

    def tile_memory(self, node, name, attrs, hint):
        if name == "load":  # pl.load(t, [i, j], shape=(R, C)[, pad=v])
            if len(node.args) != 2:
                self.fail(node, "pl.load(tensor, [offsets...], shape=(rows, cols), pad=...)")
            t = self.operand(node.args[0])
            offsets = self.offsets(node.args[1])
            shape = self.keyword(node, "shape")
            if shape is None:
                self.fail(node, "pl.load needs shape=(rows, cols)")
            src = self.type_of(node, t)
            if src is None or not src.startswith("tensor<"):
                self.fail(node.args[0], f"pl.load reads a tensor, got {src or t}")
            dims, dtype = _parse_type(src)
            ty = "tile<" + "x".join(str(d) for d in shape) + f"x{dtype}>"
            for kw in node.keywords:  # pad= (the value of elements outside the tensor)
                if kw.arg in attrs and _number(attrs[kw.arg]) is None:
                    self.fail(kw.value, f"{kw.arg}= takes a number, got {attrs[kw.arg]!r}")
            attr = " {" + ", ".join(f"{k} = {_attr(float(v))}" for k, v in attrs.items()) + "}" \
                if attrs else ""
            v = _Value(self.fresh(hint), "tile")
            self.emit(node, f"%{v.name} = tile.load {t}[{offsets}]{attr} : {ty}")
            return v
        if name == "store":  # pl.store(value, dst) or pl.store(tile, dst, [i, j])
            if len(node.args) == 2:
                self.emit(node, f"tensor.store {self.operand(node.args[0])}, "
                                f"{self.operand(node.args[1])}")
            elif len(node.args) == 3:  # a tile, or a tensor written into a box of dst
                value = self.expr(node.args[0])
                level = "tensor" if value.kind == "tensor" else "tile"
                self.emit(node, f"{level}.store {value}, "
                                f"{self.operand(node.args[1])}[{self.offsets(node.args[2])}]")
            else:
                self.fail(node, "pl.store(value, tensor) or pl.store(tile, tensor, [offsets...])")
            return None
        # pl.full(value, shape=(R, C), dtype=pl.f32)
        shape, dtype = self.keyword(node, "shape"), self.keyword(node, "dtype") or f32
        if len(node.args) != 1 or shape is None:
            self.fail(node, "pl.full(value, shape=(rows, cols), dtype=pl.f32)")
        ty = "tile<" + "x".join(str(d) for d in shape) + f"x{dtype.name}>"
        v = _Value(self.fresh(hint), "tile")
        self.emit(node, f"%{v.name} = tile.full {self.operand(node.args[0])} : {ty}")
        return v

    def offsets(self, node):
        if not isinstance(node, (ast.List, ast.Tuple)):
            self.fail(node, "offsets are a list: [i, 0]")
        return ", ".join(self.operand(e) for e in node.elts)

    def text(self, closing=False):
        results = ""
        if self.results:
            results = " -> " + (self.results[0] if len(self.results) == 1 else
                                "(" + ", ".join(self.results) + ")")
        incore = " incore" if self.incore else ""
        head = f"func @{self.func_name}({', '.join(self.params)}){results}{incore} {{"
        body = list(self.lines)
        if closing:
            body += list(reversed(self.closers))
        return "\n".join([head] + body + ["}"]) + "\n"


# The file name the type probe parses the text under, and a position in it ("<probe>:12:5"),
# which probe_failed maps back to Python.
_PROBE = "<ptox.jit text>"
_PROBE_POSITION = re.compile(re.escape(_PROBE) + r":(\d+)(?::\d+)?")


class _Module:
    """The functions of a program being translated: the helpers written so far, callees before
    callers (as the text form needs), each once per kind of arguments, and what they return."""

    def __init__(self, entry):
        self.text, self.lines, self.line_map = "", 0, {}  # line_map: text line - 1 -> Python
        self.specs = {}  # (function, arguments) -> (name, result types)
        self.names = {entry}
        self.stack = []  # the functions being written (a call of one of them recurses)

    def function(self, fn, args, constants, incore):
        """(name, result types) of helper `fn` for these arguments, an incore function when it
        is called inside an incore scope (see call_function)."""
        key = (fn, incore, tuple((kind, type(a[0]).__name__, *a) for kind, *a in args))
        if key in self.specs:
            return self.specs[key]
        node, filename = _function_ast(fn)
        if fn in self.stack:
            raise errors.CompileError(
                f"{filename}:{node.lineno}:{node.col_offset + 1}: error: {fn.__name__} calls "
                f"itself (through {' -> '.join(f.__name__ for f in self.stack)}): a function "
                "called from a kernel is inlined, so it cannot recurse")
        _check_closures(fn, node, filename, constants)
        name, k = fn.__name__, 0
        while name in self.names:
            k += 1
            name = f"{fn.__name__}_{k}"
        self.names.add(name)
        b = _Builder(fn, filename, constants, self, name)
        b.fnode, b.local_names, b.incore = node, _local_names(node), incore
        self.stack.append(fn)
        try:
            b.params = b.helper_signature(node, args)
            b.body(node.body)
        finally:
            self.stack.pop()
        self.add(b)  # verified with its caller: an error in it then names the call too
        self.specs[key] = (name, b.results)
        return self.specs[key]

    def add(self, b):
        """Appends builder b's function to the text."""
        for k, where in b.line_map.items():
            self.line_map[self.lines + k] = where
        text = b.text()
        self.text += text
        self.lines += text.count("\n")


def _called_at(message, callee, where):
    """`message`, an error inside `callee`, with the call's position after its own:
    "f.py:3:5 (in @helper, called at f.py:9:9): error: ..."."""
    m = re.search(r": (error|unsupported):", message)
    if m is None:
        return message
    return f"{message[:m.start()]} (in @{callee}, called at {where}){message[m.start():]}"


def _assigned(stmts):
    """The names the statements of a block assign, with those assigned in the ifs and loops
    nested in it: an if (compiled or, over a constant, inlined) rebinds the names its arms
    assign, a loop the names it carries, so for the block they are assigned too (a loop that
    missed one assigned in a nested if did not carry it: the value was silently dropped)."""
    names = []

    def add(n):
        if n not in names:
            names.append(n)
    for s in stmts:
        if isinstance(s, ast.Assign):
            for t in s.targets:
                for e in t.elts if isinstance(t, ast.Tuple) else [t]:  # m, s = f(x) too
                    if isinstance(e, ast.Name):
                        add(e.id)
        elif isinstance(s, ast.If):
            for n in _assigned(s.body) + _assigned(s.orelse):
                add(n)
        elif isinstance(s, (ast.For, ast.While)):
            for n in _assigned(s.body):
                add(n)
    return names


def _number(value):
    """A compile-time constant as the program takes it (bool, int or float; numpy scalars
    too), or None for any other value."""
    if isinstance(value, (bool, _np_bool_types())):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return None


def _np_bool_types():
    """numpy's bool scalar type when numpy is loaded (a module-level flag may be one)."""
    np = sys.modules.get("numpy")
    return (np.bool_,) if np is not None else ()


def _fold(op, a, b):
    """`a op b` of two constants, where Python's value is the one the program would compute
    (the arith op it would otherwise emit), else None (the program computes it). On two ints
    `/` is floor division, as arith.div; `//` and `%` fold on ints only (on floats arith.div is
    true division, and arith.rem of negative ints is left to the op's own rule)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return None
    ints = isinstance(a, int) and isinstance(b, int)
    if isinstance(op, (ast.Add, ast.Sub, ast.Mult)):
        return {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}[
            type(op)](a, b)
    if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
        return None  # the program's division by zero, where and as the op defines it
    if isinstance(op, ast.Div):
        return a // b if ints else a / b
    if isinstance(op, ast.FloorDiv) and ints:
        return a // b
    if isinstance(op, ast.Mod) and ints and a >= 0 and b > 0:
        return a % b
    if isinstance(op, ast.Pow) and (not ints or b >= 0):
        try:
            value = a ** b
        except OverflowError:
            return None
        return value if isinstance(value, (int, float)) else None  # not a complex root
    return None


def _constant_function(fn):
    """Functions of constants a kernel may call at compile time: float("-inf"), int(x),
    abs(x) and the math module's (math.sqrt(D))."""
    # (min, max, abs, sum, range and slice of this module are the language's ops: builtins.*)
    return (any(fn is f for f in (float, int, builtins.abs)) or
            (callable(fn) and getattr(fn, "__module__", None) == "math"))


def _local_names(node):
    """The names a function binds (parameters, assignments, loop variables): Python reads
    them from the function wherever they appear, never from its globals."""
    names = {a.arg for a in node.args.args}
    names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Store))
    return names


def _attr(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):  # the text form's strings: no escapes, so no quotes or backslashes
        if '"' in v or "\\" in v or "\n" in v:
            raise errors.CompileError(f"attribute strings cannot hold quotes, backslashes or "
                                      f"newlines: {v!r}")
        return f'"{v}"'
    return str(v)


def _type_text(level, dims, dtype):
    """("tensor", ["N", 64], "f32") -> "tensor<{N}x64xf32>"."""
    text = "x".join(f"{{{d}}}" if isinstance(d, str) else str(d) for d in dims)
    return f"{level}<{text + 'x' if text else ''}{dtype}>"


def _parse_type(text):
    """("tensor<{N}x64xf32>") -> (["N", 64], "f32")."""
    inner = text[text.index("<") + 1:-1]
    parts = inner.split("x")
    dims = [p[1:-1] if p.startswith("{") else int(p) for p in parts[:-1]]
    return dims, parts[-1]


def _function_ast(fn):
    """The FunctionDef of `fn` with the positions it has in its file (line and column), read the
    way inspect.getsource reads it: from linecache, so a function defined in an IPython /
    Jupyter cell or by exec of source registered there (as IPython does) compiles too.

    The source block is not dedented: a function defined inside another block (a test, a
    factory, an `if`) is parsed as the body of an `if 1:`, which takes a body at any
    indentation, so columns are the file's and a docstring line indented less than the body
    does not break the parse (textwrap.dedent then leaves the block indented)."""
    filename = fn.__code__.co_filename
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise errors.CompileError(
            f"{filename}:{fn.__code__.co_firstlineno}: error: cannot read the source of "
            f"{fn.__name__} ({e}); @ptox.jit compiles a function from its source, so it must be "
            "defined in a file, an IPython / Jupyter cell, or source registered in linecache "
            "(exec of a string and %%time / %%timeit cells keep none: define the kernel in a "
            "cell of its own)") from None
    source = "".join(lines)
    indented = source[:1] in (" ", "\t")
    try:
        tree = ast.parse("if 1:\n" + source if indented else source, filename)
    except SyntaxError as e:  # the file changed since the function was defined
        raise errors.CompileError(f"{filename}:{first_line}: error: cannot parse the source of "
                                  f"{fn.__name__} ({e.msg}); was the file edited since it was "
                                  "imported?") from None
    node = tree.body[0].body[0] if indented else tree.body[0]
    ast.increment_lineno(tree, first_line - (2 if indented else 1))
    if not isinstance(node, ast.FunctionDef):
        raise errors.CompileError(f"{filename}:{first_line}: error: @ptox.jit takes a function "
                                  f"defined with def, got {type(node).__name__}")
    return node, filename


def _check_closures(fn, node, filename, constants):
    """A name the function reads from an enclosing function's scope is refused (its value is
    not a compile-time constant the program can name), unless constants= gives it. The error
    points at its first use in the body, where the reader sees it."""
    free = [n for n in fn.__code__.co_freevars if n not in constants]
    if not free:
        return
    # The body only: annotations and decorators are evaluated in the enclosing scope.
    uses = [n for s in node.body for n in ast.walk(s) if isinstance(n, ast.Name) and n.id in free]
    at = builtins.min(uses, key=lambda n: (n.lineno, n.col_offset)) if uses else node
    name = at.id if uses else free[0]
    cell = fn.__closure__[fn.__code__.co_freevars.index(name)]
    try:
        kind = f" (a {type(cell.cell_contents).__name__})"
    except ValueError:  # an empty cell: assigned after the function was defined
        kind = ""
    raise errors.CompileError(
        f"{filename}:{at.lineno}:{at.col_offset + 1}: error: @ptox.jit functions cannot close "
        f"over local variables: '{name}'{kind} is a local variable of an enclosing function; "
        f"pass it with constants={{'{name}': ...}} or define it at module level")


def translate(fn, constants=None):
    """The .pto text of a Python function and a map from text lines to Python positions.
    `constants` names compile-time values (ints, floats, bools) the function reads as globals:
    immediates in ops and shapes, and `if` over one compiles only the arm taken."""
    constants = constants or {}
    try:
        node, filename = _function_ast(fn)
        _check_closures(fn, node, filename, constants)
        module = _Module(fn.__name__)
        b = _Builder(fn, filename, constants, module)
        b.fnode, b.local_names = node, _local_names(node)
        b.params = b.signature(node)
        b.body(node.body)
        module.add(b)
    except errors.CompileError as e:
        # The message names the user's file:line:col; the frames of the translator under it
        # (a dozen in a notebook's traceback) say nothing to the user, so leave them out.
        raise e.with_traceback(None) from None
    return module.text, module.line_map
