"""Module-level constants whose initializer raised when the generated module was imported.

LANGUAGE.md section 6: a program the compiler accepts never fails at import time. The
compiler rejects what it can prove would raise there (a division by zero, an index past the
end, a size mismatch...); an initializer that may still raise (`batch_norm` of one value per
channel, an embedding id past the table, a tensor too large to allocate) is computed inside
``try`` by the generated module, and a failure binds the constant to an ``Unavailable``
value instead of failing the import. Using that value (an operator, an attribute such as
``.to(...)``, a torch function, ``int()``, indexing, iteration, printing) raises
``ConstantUnavailable`` naming the constant, with the original exception as its cause, as a
body that raises when it runs would.

``constant_to`` is how a body reads a tensor constant: where (and in the dtype) it computes.
"""

__all__ = ["ConstantUnavailable", "Unavailable", "constant_to", "unavailable"]


class ConstantUnavailable(RuntimeError):
    """A module-level constant whose initializer raised at import was used."""


def _fail(value):
    name = object.__getattribute__(value, "_name")
    error = object.__getattribute__(value, "_error")
    raise ConstantUnavailable(
        "the constant %r could not be computed when the module was imported (%s: %s)"
        % (name, type(error).__name__, error)) from error


class Unavailable:
    """What a constant whose initializer raised at import is bound to: any use raises."""

    __slots__ = ("_name", "_error")

    def __init__(self, name, error):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_error", error)

    def __repr__(self):
        error = object.__getattribute__(self, "_error")
        return "<unavailable constant %r: %s: %s>" % (
            object.__getattribute__(self, "_name"), type(error).__name__, error)

    def __getattr__(self, attr):
        _fail(self)

    def __setattr__(self, attr, value):
        _fail(self)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for value in list(args) + list((kwargs or {}).values()):
            if isinstance(value, cls):
                _fail(value)
            if isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, cls):
                        _fail(item)
        return NotImplemented


def _raiser(self, *args, **kwargs):
    _fail(self)


for _name in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
              "rfloordiv", "mod", "rmod", "pow", "rpow", "matmul", "rmatmul", "neg", "pos",
              "abs", "invert", "and", "rand", "or", "ror", "xor", "rxor", "eq", "ne", "lt",
              "le", "gt", "ge", "bool", "int", "float", "complex", "index", "len", "iter",
              "getitem", "setitem", "contains", "call", "round", "trunc", "floor", "ceil",
              "str", "format", "array"):
    setattr(Unavailable, "__%s__" % _name, _raiser)
del _name


def unavailable(name, error):
    """The value a generated module binds the constant ``name`` to when computing it raised
    ``error`` at import."""
    return Unavailable(name, error)


def constant_to(value, device, dtype=None):
    """A module-level tensor constant as a body reads it: on ``device`` (the body's inputs'),
    in ``dtype`` when given (a converted model's float dtype), so the constant itself when it
    is there already (``value.to(...)``).

    A function of its own, registered with ``torch.fx.wrap``: under
    ``torch.fx.symbolic_trace`` the device and dtype of an input are Proxies, which
    ``Tensor.to`` rejects, and the call is one node of the graph (the constant a
    ``_tensor_constant`` attribute), which computes this when the graph runs. torch.compile
    traces through it."""
    if dtype is None:
        return value.to(device)
    return value.to(device=device, dtype=dtype)
