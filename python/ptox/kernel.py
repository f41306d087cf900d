"""Calling a ptox program from Python: arguments by position, outputs allocated when not given,
symbolic dims bound from the arguments' shapes, zero-copy arrays (numpy, torch, __dlpack__)."""

import numpy as np

from . import _core
from . import errors

# ptox dtype -> numpy dtype of an allocated output (bf16 outputs are ml_dtypes.bfloat16 arrays).
_NUMPY = {"f32": np.float32, "f16": np.float16, "i8": np.int8, "i32": np.int32, "i64": np.int64,
          "bool": np.bool_, "index": np.int64}


def _bfloat16():
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes is a dependency
        raise errors.UnsupportedError("bf16 arrays need the ml_dtypes package") from None
    return ml_dtypes.bfloat16


# numpy dtype -> ptox dtype name (a dict lookup per argument: a decode step binds 20 of them).
_PTOX_OF_NUMPY = {np.dtype(v): k for k, v in _NUMPY.items() if k != "index"}


def _dtype_of(array):
    """The ptox dtype name of an array's elements."""
    if isinstance(array, np.ndarray):
        name = _PTOX_OF_NUMPY.get(array.dtype)
        if name is not None:
            return name
    module = type(array).__module__
    if module.startswith("torch"):
        name = str(array.dtype).replace("torch.", "")
        table = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int8": "i8",
                 "int32": "i32", "int64": "i64", "bool": "bool"}
        if name not in table:
            raise errors.ShapeError(f"torch dtype {name} has no ptox dtype")
        return table[name]
    dt = np.dtype(array.dtype)
    if dt.name == "bfloat16":
        return "bf16"
    for ptox_name in ("f32", "f16", "i8", "i32", "i64", "bool"):
        if dt == np.dtype(_NUMPY[ptox_name]):
            return ptox_name
    raise errors.ShapeError(f"numpy dtype {dt} has no ptox dtype")


def _as_core_array(array, dtype):
    """What the C++ side reads of an array of ptox dtype `dtype`: the array itself, or a uint16
    view of a bfloat16 numpy array (numpy cannot export that dtype through DLPack). Never a
    copy."""
    if dtype == "bf16" and isinstance(array, np.ndarray):
        return array.view(np.uint16)
    return array


def _is_array(x):
    return isinstance(x, np.ndarray) or hasattr(x, "__dlpack__")


def _ptox_dtype_or_none(array):
    try:
        return _dtype_of(array)
    except errors.ShapeError:
        return None


def _dtype_name(array):
    """An array's dtype as its own library spells it: float64, bfloat16, torch.float64."""
    if type(array).__module__.startswith("torch"):
        return str(array.dtype)
    try:
        return np.dtype(array.dtype).name
    except TypeError:
        return str(array.dtype)


def _kind_of(value):
    """What a value is, for an argument error: "int", "float", "an array of shape (3, 4)"."""
    if _is_array(value):
        return f"an array of shape {tuple(value.shape)}"
    return type(value).__name__


_FLOATS = ("f32", "f16", "bf16")


def _scalar_mismatch(param, value):
    """Why `value` cannot be the scalar parameter `param`, or None."""
    if _is_array(value) or not isinstance(value, (bool, int, float, np.integer, np.floating)):
        return f"expected a scalar ({param['dtype']}), got {_kind_of(value)}"
    is_float = isinstance(value, (float, np.floating))
    if param["dtype"] in _FLOATS and not is_float:
        return f"expected a float scalar ({param['dtype']}), got {_kind_of(value)}"
    if param["dtype"] not in _FLOATS and is_float:
        return f"expected an integer scalar ({param['dtype']}), got {_kind_of(value)}"
    return None


def _tensor_mismatch(param, value, symbols):
    """Why `value` cannot be the tensor parameter `param`, or None; binds the symbols of its
    dims in `symbols` (those an earlier argument bound must agree)."""
    if not _is_array(value):
        return f"expected a tensor ({_spelled(param)}), got {_kind_of(value)}"
    shape = tuple(value.shape)
    if len(shape) != len(param["dims"]):
        return (f"expected {len(param['dims'])} dims ({_spelled(param)}), got an array of "
                f"shape {shape}")
    if _ptox_dtype_or_none(value) != param["dtype"]:
        return f"expected {param['dtype']}, got {_dtype_name(value)}"
    for d, (want, got) in enumerate(zip(param["dims"], shape)):
        if isinstance(want, str):
            if symbols.setdefault(want, got) != got:
                return (f"dim {d} is {want} = {symbols[want]} from an earlier argument, got "
                        f"shape {shape}")
        elif want != got:
            return f"expected shape ({_spelled(param, dtype=False)}), got {shape}"
    return None


def _spelled(param, dtype=True):
    """A tensor parameter's type as a user reads it: "N x 16 f32"."""
    dims = " x ".join(str(d) for d in param["dims"]) or "scalar"
    return f"{dims} {param['dtype']}" if dtype else dims.replace(" x ", ", ")


class Kernel:
    """A compiled-on-first-call function of a ptox program.

    ``k(a, b)`` returns the outputs it allocated (one array, or a tuple); ``k(a, b, out=c)`` (or
    ``k(a, b, c)``) writes the caller's buffers. One compile per target, whatever the sizes of
    the symbolic dims.
    """

    def __init__(self, program, function="", target="cpu", threads=0, where=None):
        # Inputs whose contents stay the same between calls (model weights): compiled matmuls
        # keep the blocks they pack from them (RunOptions::constants). After changing one,
        # call forget_constants().
        self.constant_inputs = ()
        # False: compile without fuse-elementwise, one kernel per tensor op (what fusion saves:
        # bench/decode_bytes.py).
        self.fuse = True
        self.function = function
        self.target = target
        self.threads = threads
        self._where = where  # maps a C++ diagnostic to the Python source (ptox.jit)
        if program is not None:  # None: a subclass sets it later (ptox.jit, on first use)
            self._set_program(program)

    def _set_program(self, program):
        self.program = program
        self._params = program.params(self.function)
        self._n = len(self._params)
        self._written = [p["dir"] != "in" for p in self._params]
        self._name = self.function or program.function_names()[-1]

    def forget_constants(self):
        """Drops the packed blocks kept for constant_inputs (their contents changed)."""
        self.program.forget_constants()

    @property
    def params(self):
        return list(self._params)

    def ir(self):
        """The program's text (it parses back to the same program)."""
        return self.program.text()

    def source(self, target=None):
        """The code generated for a compiled target."""
        return self._call(_core.compile, self.program, target or self.target, self.function,
                          "source", self.fuse)

    def build(self, target=None):
        """Compiles for `target` into the compile cache now, so that the first call only loads
        the binary. The compiler runs without the GIL: a thread can build one kernel while
        another compiles or runs a second (a model's decode step while its prefill compiles)."""
        self._call(_core.compile, self.program, target or self.target, self.function, "binary",
                   self.fuse)

    def stages(self, target=None, dump_dir=None):
        """(pass, IR text) after every pass of the default pipeline; with dump_dir, also written
        there as NN-<pass>.pto (as `ptox opt --dump-dir`)."""
        stages = self._call(_core.stages, self.program, target or self.target, self.fuse)
        if dump_dir is not None:
            import os
            os.makedirs(dump_dir, exist_ok=True)
            for k, (name, text) in enumerate(stages, 1):
                with open(os.path.join(dump_dir, f"{k:02d}-{name}.pto"), "w") as f:
                    f.write(text)
        return stages

    def stats(self):
        """How this kernel's calls got their compiled code: ``calls`` (runs whose arguments were
        accepted), ``compiles`` (executables made: the program lowered and its code generated,
        once per target, fuse setting and function, not per size), ``builds`` (of those, the ones
        the host compiler built), ``cache_hits`` (of those, the ones whose binary the compile
        cache already held, on disk or loaded in this process); and the same per target, under
        ``"targets"`` ({"cpu-avx512": {...}}). A call that reuses a compiled executable counts
        in ``calls`` only."""
        keys = ("calls", "compiles", "builds", "cache_hits")  # the order compile_stats gives
        per_target = {target: dict(zip(keys, counts))
                      for target, counts in self.program.compile_stats()}
        total = {k: sum(t[k] for t in per_target.values()) for k in keys}
        total["targets"] = per_target
        return total

    def _located(self, e):
        return self._where(str(e)) if self._where is not None else str(e)

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except errors.Error as e:
            raise type(e)(self._located(e)) from None

    def _check_arguments(self, values):
        """The symbols the arguments `values` (in parameter order, perhaps fewer than the
        parameters) bind; raises ShapeError naming the first argument that does not fit its
        parameter: "argument 'x' (parameter 1 of kernel f): expected f32, got float64"."""
        symbols = {}
        for i, (p, v) in enumerate(zip(self._params, values)):
            why = (_tensor_mismatch(p, v, symbols) if p["is_tensor"]
                   else _scalar_mismatch(p, v))
            if why is not None:
                raise errors.ShapeError(f"argument '{p['name']}' (parameter {i + 1} of kernel "
                                        f"{self._name}): {why}")
        return symbols

    def _bind(self, args, out):
        """The argument list for the C++ core (outputs not given allocated, their symbolic dims
        from the arguments' shapes) and the arrays the call returns."""
        params = self._params
        given = list(args)
        outs = [] if out is None else (list(out) if isinstance(out, (tuple, list)) else [out])
        if outs and len(given) + len(outs) != len(params):
            raise errors.ShapeError(f"{len(params)} parameters, got {len(given)} arguments and "
                                    f"{len(outs)} outputs")
        if len(given) > len(params):
            raise errors.ShapeError(f"{len(params)} parameters, got {len(given)} arguments")
        if not outs and len(given) < len(params):
            missing = params[len(given):]
            if any(p["dir"] != "out" for p in missing):
                names = ", ".join(p["name"] for p in missing if p["dir"] != "out")
                raise errors.ShapeError(f"missing arguments for {names}")
        values = given + outs
        symbols = self._check_arguments(values)
        allocated = []
        for p in params[len(values):]:
            dims = []
            for want in p["dims"]:
                if isinstance(want, str):
                    if want not in symbols:
                        raise errors.ShapeError(f"output %{p['name']} has dim {want}, which no "
                                                f"input gives: pass it with out=")
                    dims.append(symbols[want])
                else:
                    dims.append(want)
            dtype = _bfloat16() if p["dtype"] == "bf16" else _NUMPY[p["dtype"]]
            array = np.zeros(dims, dtype=dtype)
            allocated.append(array)
            values.append(array)
        core = []
        for p, v in zip(params, values):
            if p["is_tensor"]:
                dtype = _dtype_of(v)
                core.append((_as_core_array(v, dtype), dtype))
            elif isinstance(v, (bool, int, np.integer)):
                core.append(int(v))
            elif isinstance(v, (float, np.floating)):
                core.append(float(v))
            else:
                raise errors.ShapeError(f"%{p['name']} is a {p['dtype']} scalar, got "
                                        f"{type(v).__name__}")
        returned = allocated if allocated else [v for p, v in zip(params, values)
                                                if p["dir"] != "in"]
        return core, returned

    def __call__(self, *args, out=None, target=None, threads=None, check=False, check_nan=False):
        target = target or self.target
        threads = self.threads if threads is None else threads
        full = args if out is None else args + (tuple(out) if isinstance(out, (tuple, list))
                                                 else (out,))
        for p, v, written in zip(self._params, full, self._written):
            if written and isinstance(v, np.ndarray) and not v.flags.writeable:
                raise errors.ShapeError(f"%{p['name']} is written by the kernel, but its array is "
                                        "read-only")
        if len(full) == self._n and not (check or check_nan):
            # Every argument given: the C++ core binds them (one call, no Python per argument).
            try:
                ran = _core.run_direct(self.program, full, target, self.function, threads,
                                       list(self.constant_inputs), self.fuse)
            except errors.InvalidError as e:
                self._check_arguments(full)  # names the argument at fault, when one is
                raise errors.ShapeError(self._located(e)) from None
            except errors.Error as e:
                raise type(e)(self._located(e)) from None
            if ran:
                returned = [a for a, written in zip(full, self._written) if written]
                return returned[0] if len(returned) == 1 else tuple(returned)
        core, returned = self._bind(args, out)
        try:
            if check:
                self._check(core, target, threads)
            else:
                _core.run(self.program, core, target, self.function, threads, check_nan,
                          self.fuse, constants=list(self.constant_inputs))
        except errors.InvalidError as e:  # arguments the core refused
            raise errors.ShapeError(self._located(e)) from None
        except errors.Error as e:
            raise type(e)(self._located(e)) from None
        return returned[0] if len(returned) == 1 else tuple(returned)

    def _check(self, core, target, threads):
        """Runs the interpreter on copies of the outputs, then the target, and compares."""
        copies = []
        for p, a in zip(self._params, core):
            if p["is_tensor"] and p["dir"] != "in":
                copies.append((np.array(a[0], copy=True), a[1]))
            else:
                copies.append(a)
        self._call(_core.run, self.program, copies, "interp", self.function, 1, False)
        self._call(_core.run, self.program, core, target, self.function, threads, False,
                   self.fuse)
        bound = self._call(_core.reorder_bound, self.program, core, self.function)
        for p, got, ref in zip(self._params, core, copies):
            if not p["is_tensor"] or p["dir"] == "in":
                continue
            g, r = np.asarray(got[0]), np.asarray(ref[0])
            if bound == 0:
                same = g.tobytes() == r.tobytes() if g.flags.c_contiguous else np.array_equal(
                    g.view(np.uint8), r.view(np.uint8))
                if not same:
                    raise errors.CheckError(f"%{p['name']}: {target} differs from the interpreter "
                                            "(bit-exact expected)")
                continue
            gf, rf = _as_f64(g, got[1]), _as_f64(r, ref[1])
            tol = bound * (np.abs(rf) + (np.abs(rf).max() if rf.size else 0.0))
            bad = ~((np.abs(gf - rf) <= tol) | (np.isnan(gf) & np.isnan(rf)))
            if bad.any():
                i = tuple(int(x) for x in np.argwhere(bad)[0])
                raise errors.CheckError(f"%{p['name']}{list(i)}: {target} {gf[i]!r} vs interpreter "
                                        f"{rf[i]!r}, beyond the bound {bound:g} x (|ref| + max|ref|)")


def _as_f64(array, dtype):
    if dtype == "bf16":
        return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return array.astype(np.float64)
