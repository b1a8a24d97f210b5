#!/usr/bin/env python3
"""Seeded random differential test of scalar control flow and arithmetic.

    python3 tests/e2e/test_differential.py --tritonc build/tools/tritonc/tritonc
        [--programs N] [--seed S] [--per-file K] [--arg-sets A] [--exclude F,F]
        [--float-rtol R] [--only N,N] [--reduce] [-v]

Generates random, valid Triton DSL programs: an entry `fn` (plus helper `fn`s it calls, some
of them copies of another helper, identical or differing in one literal, operator, default
or return type, for -Os's merge-functions) over `int`/`float`/`bool` scalars, with let,
reassignment (also `+= -= *= /=`), `+ - * / % **`, comparisons, `&& || !`, if / else if /
else, `for` over `range(...)` and `a..b`, `while` with a counter that guarantees termination,
break, continue, return inside branches and loops, nested loops, swaps and rotations (through
temporaries and arithmetic), shadowing `let`s, `let x: T` assigned in both branches, casts,
named and default arguments, top-level constants, names that are Python keywords or look like
the emitter's temporaries (`t`, `t_2`), line breaks, `;` and comments where LANGUAGE.md §1
allows them, and a few `fn`s over small float tensors (+ - * relu abs tanh). Each program is
interpreted directly from the generator's syntax tree by the reference interpreter below
(never from tritonc's output), compiled at -O0 -O1 -O2 -O3 -Os (several programs per file,
so one compile per level serves them all), run on several argument sets, and compared: ints
and bools exactly (bools must be bools, ints must not be), floats (which must be floats) within --float-rtol (1e-9)
relative, tensors within 1e-5 (and input tensors must not change).

The reference follows LANGUAGE.md and docs/language.md:
  * `/` of two integers is floor division, `%` is Python's (floored: the result has the
    divisor's sign; the contract is silent on `%`, this is what -O0 emits);
  * an int mixed with a float gives a float (`/` is then true division); an int literal
    expression stays an int (`x * (7 / 2)` is `x * 3`), as -O0 does;
  * `&&` and `||` short-circuit (a guarded `d != 0 && n / d > k` must not divide by zero);
  * `for i in a..b` excludes b, as `range(a, b)` (what -O0 emits; the contract is silent);
  * reassigning a `for` variable does not change the iteration (Python's `for`);
  * `trit(x)` rounds (half to even, as torch.round) and clamps to {-1, 0, 1} (§3);
  * `int(x)` of a float truncates toward zero (as Python's int() and torch's casts);
  * scalar floats are computed as Python floats (64-bit), which is what -O0 emits even
    though the contract calls `float` float32.
Where a program leaves the contract for some arguments (an int outside int32, a float that is
not finite, a division by zero: an optimized program may drop an unused division) that
argument set is not compared (counted as "skipped"). Most divisors are built never to be
zero; others may be, under a guard, in a loop that may not run, or in a branch not taken,
where a division must not be moved to (docs/passes.md, licm and dce).

--exclude turns features off (the list is in --help), e.g. `--exclude trit,inexact` to hunt
for other bugs while trit() and the float32 constant folding are known to differ. A mismatch
prints the program, the level, the arguments, expected and got, and saves the program (and
the generated modules) in a directory named in the message; --reduce also shrinks each
failing program (slow) and prints the smallest one that still fails at the same levels;
--only re-runs chosen programs of a seed. A program that `tritonc check` rejects is a bug of
this generator and fails the run with the diagnostics. Ends with "N passed, N failed" (one
count per program); exits 1 on any failure.
"""
import argparse
import copy
import importlib.util
import math
import operator
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import runner  # noqa: E402

REPO = runner.REPO
sys.path.insert(0, os.path.join(REPO, "runtime"))

LEVELS = ["-O0", "-O1", "-O2", "-O3", "-Os"]
INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1
INT, FLOAT, BOOL, TENSOR = "int", "float", "bool", "tensor"
FEATURES = ["float", "inexact", "trit", "tensor", "calls", "clones", "globals",
            "odd_module_names", "odd_names", "shadow", "zerodiv", "guarded", "shortcircuit",
            "pow", "intdiv", "floatmod", "loopvar_assign", "uninit_let", "literal_forms",
            "layout", "while", "for", "return"]
CALL_TIMEOUT_S = 5.0
MAX_STEPS = 2_000_000


# ---- syntax tree ----------------------------------------------------------------------------

class Lit:
    def __init__(self, value, ty, text):
        self.value, self.ty, self.text = value, ty, text


class Var:
    def __init__(self, name, ty):
        self.name, self.ty = name, ty


class Un:
    def __init__(self, op, e, ty):
        self.op, self.e, self.ty = op, e, ty


class Bin:
    def __init__(self, op, l, r, ty):
        self.op, self.l, self.r, self.ty = op, l, r, ty


def constant_int(e):
    """The value of an integer expression made of literals only (+ - * ** and negation), or
    None: what the checker folds."""
    if isinstance(e, Lit):
        return e.value if isinstance(e.value, int) and not isinstance(e.value, bool) else None
    if isinstance(e, Un) and e.op in ("-", "+"):
        v = constant_int(e.e)
        return None if v is None else (-v if e.op == "-" else v)
    if isinstance(e, Bin) and e.op in ("+", "-", "*", "**"):
        l, r = constant_int(e.l), constant_int(e.r)
        if l is None or r is None or (e.op == "**" and (r < 0 or r > 64)):
            return None
        return {"+": l + r, "-": l - r, "*": l * r, "**": l ** r if e.op == "**" else 0}[e.op]
    return None


class Cast:
    """int(e), float(e), trit(e) (a trit takes part in int arithmetic as an int)."""

    def __init__(self, to, e, ty):
        self.to, self.e, self.ty = to, e, ty


class Call:
    def __init__(self, fn, args, ty):
        self.fn, self.args, self.ty = fn, args, ty  # args: [(name or None, expr)]


class Builtin:
    """A tensor builtin: relu(t), abs(t), tanh(t)."""

    def __init__(self, name, args, ty):
        self.name, self.args, self.ty = name, args, ty


class Let:
    def __init__(self, name, annot, e, ty):
        self.name, self.annot, self.e, self.ty = name, annot, e, ty  # e may be None (annot set)


class Assign:
    def __init__(self, name, op, e, ty):
        self.name, self.op, self.e, self.ty = name, op, e, ty  # ty: the variable's type


class If:
    def __init__(self, cond, then, els):
        self.cond, self.then, self.els = cond, then, els  # els: None, [stmts] or [If]


class For:
    def __init__(self, var, form, bounds, body):
        # form "range" (bounds: 1-3 exprs) or "dots" (bounds: 2 exprs)
        self.var, self.form, self.bounds, self.body = var, form, bounds, body


class While:
    def __init__(self, cond, body):
        self.cond, self.body = cond, body


class Break:
    pass


class Continue:
    pass


class Return:
    def __init__(self, e):
        self.e = e


class ExprStmt:
    def __init__(self, e):
        self.e = e


class FnDef:
    def __init__(self, name, params, ret, body, bound_params=()):
        self.name, self.params, self.ret, self.body = name, params, ret, body
        self.bound_params = set(bound_params)  # small ints used as loop bounds
        self.globals = []  # the program's top-level lets (one list shared by its fns)
        # params: [(name, ty, default Lit or None)]


# ---- rendering ------------------------------------------------------------------------------

PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5,
        "*": 6, "/": 6, "%": 6, "**": 8}
TYPE_TEXT = {INT: "int", FLOAT: "float", BOOL: "bool", TENSOR: "Tensor<float32, [?]>"}


def render(e):
    """(text, precedence) with the fewest parentheses the grammar needs, so the parser's
    precedence is exercised too (comparisons are never chained)."""
    if isinstance(e, Lit):
        return e.text, 9
    if isinstance(e, Var):
        return e.name, 9
    if isinstance(e, Un):
        text, p = render(e.e)
        if p < 7:
            text = "(" + text + ")"
        if e.op == "-" and text.startswith("-"):
            text = " " + text
        return e.op + text, 7
    if isinstance(e, Bin):
        p = PREC[e.op]
        lt, lp = render(e.l)
        rt, rp = render(e.r)
        if e.op == "**":
            if lp < 9:
                lt = "(" + lt + ")"
            if rp < 7:
                rt = "(" + rt + ")"
        else:
            if lp < p or (lp == p and p in (3, 4)):
                lt = "(" + lt + ")"
            if rp <= p:
                rt = "(" + rt + ")"
        brk = getattr(e, "brk", None)  # --layout: line breaks and comments (LANGUAGE.md §1)
        if brk == "after":
            return "%s %s\n%s" % (lt, e.op, rt), p
        if brk == "before" and e.op not in ("+", "-"):
            return "%s\n%s %s" % (lt, e.op, rt), p
        if brk == "comment":
            return "%s /* c */ %s %s" % (lt, e.op, rt), p
        return "%s %s %s" % (lt, e.op, rt), p
    if isinstance(e, Cast):
        return "%s(%s)" % (e.to, render(e.e)[0]), 9
    if isinstance(e, Call):
        parts = [(n + "=" if n else "") + render(a)[0] for n, a in e.args]
        return "%s(%s)" % (e.fn.name, ", ".join(parts)), 9
    if isinstance(e, Builtin):
        return "%s(%s)" % (e.name, ", ".join(render(a)[0] for a in e.args)), 9
    raise TypeError(e)


def rtext(e):
    return render(e)[0]


SIMPLE = (Let, Assign, Break, Continue, Return, ExprStmt)


def render_block(stmts, indent, out):
    pad = "    " * indent
    join = False
    for s in stmts:
        start = len(out)
        if isinstance(s, Let):
            annot = ": " + TYPE_TEXT[s.annot] if s.annot else ""
            init = " = " + rtext(s.e) if s.e is not None else ""
            out.append("%slet %s%s%s" % (pad, s.name, annot, init))
        elif isinstance(s, Assign):
            out.append("%s%s %s %s" % (pad, s.name, s.op, rtext(s.e)))
        elif isinstance(s, If):
            out.append("%sif %s {" % (pad, rtext(s.cond)))
            render_block(s.then, indent + 1, out)
            node = s
            else_nl = getattr(s, "else_nl", False)
            while node.els is not None:
                if len(node.els) == 1 and isinstance(node.els[0], If) and \
                        getattr(node.els[0], "chained", False):
                    node = node.els[0]
                    out.append("%s} else if %s {" % (pad, rtext(node.cond)))
                    render_block(node.then, indent + 1, out)
                    continue
                if else_nl:
                    out.append("%s}" % pad)
                    out.append("%selse {" % pad)
                else:
                    out.append("%s} else {" % pad)
                render_block(node.els, indent + 1, out)
                break
            out.append("%s}" % pad)
        elif isinstance(s, For):
            if s.form == "dots":
                it = "%s..%s" % (rtext(s.bounds[0]), rtext(s.bounds[1]))
            else:
                it = "range(%s)" % ", ".join(rtext(b) for b in s.bounds)
            out.append("%sfor %s in %s {" % (pad, s.var, it))
            render_block(s.body, indent + 1, out)
            out.append("%s}" % pad)
        elif isinstance(s, While):
            out.append("%swhile %s {" % (pad, rtext(s.cond)))
            render_block(s.body, indent + 1, out)
            out.append("%s}" % pad)
        elif isinstance(s, Break):
            out.append(pad + "break")
        elif isinstance(s, Continue):
            out.append(pad + "continue")
        elif isinstance(s, Return):
            out.append(pad + "return " + rtext(s.e))
        elif isinstance(s, ExprStmt):
            out.append(pad + rtext(s.e))
        else:
            raise TypeError(s)
        if isinstance(s, SIMPLE):
            # --layout: `a = 1; b = 2` on one line, a `;` that ends nothing, a comment
            if join and len(out) == start + 1:
                line = out.pop()
                out[-1] += "; " + line.lstrip()
            if getattr(s, "trailing_semi", False):
                out[-1] += ";"
            join = getattr(s, "semi", False)
            if getattr(s, "comment", False) and not join:
                out[-1] += "  # a comment; with { braces"
        else:
            join = False


def render_fn(fn):
    params = []
    for name, ty, default in fn.params:
        params.append("%s: %s%s" % (name, TYPE_TEXT[ty],
                                    " = " + rtext(default) if default is not None else ""))
    out = ["fn %s(%s) -> %s {" % (fn.name, ", ".join(params), TYPE_TEXT[fn.ret])]
    render_block(fn.body, 1, out)
    out.append("}")
    return "\n".join(out) + "\n"


def render_program(fns):
    out = []
    seen = set()
    for f in fns:
        if f.globals and id(f.globals) not in seen:
            seen.add(id(f.globals))
            for st in f.globals:
                render_block([st], 0, out)
    if out:
        out.append("")
    return "\n".join(out) + "\n".join(render_fn(f) for f in fns)


# ---- reference interpreter ------------------------------------------------------------------

class OutOfContract(Exception):
    """The reference left int32 or the finite floats: not compared."""


class BreakSig(Exception):
    pass


class ContinueSig(Exception):
    pass


class ReturnSig(Exception):
    def __init__(self, value):
        Exception.__init__(self)
        self.value = value


# `/` of two ints is floor division (docs/language.md); of floats, true division.
INT_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.floordiv,
           "%": operator.mod, "**": operator.pow}
FLOAT_OPS = dict(INT_OPS, **{"/": operator.truediv})


def check_int(v):
    if not (INT32_MIN <= v <= INT32_MAX):
        raise OutOfContract("int32 overflow: %d" % v)
    return v


def check_float(v):
    if not math.isfinite(v) or abs(v) > 1e30:
        raise OutOfContract("float out of range: %r" % v)
    return v


def coerce(value, ty):
    if ty == FLOAT and not isinstance(value, float):
        return float(value)
    return value


def trit_of(v):
    return max(-1, min(1, int(round(v))))


class Interp:
    def __init__(self, torch_mod=None, max_steps=MAX_STEPS):
        self.steps = 0
        self.globals_cache = {}
        self.max_steps = max_steps
        self.torch = torch_mod

    def tick(self):
        self.steps += 1
        if self.steps > self.max_steps:
            raise RuntimeError("reference interpreter: step limit (generator bug: a loop that "
                               "does not terminate)")

    def global_values(self, lets):
        key = id(lets)
        if key not in self.globals_cache:
            env = [{}]
            for st in lets:
                self.stmt(st, env)  # a block's scope is env[-1]: every let lands in env[0]
            self.globals_cache[key] = env[0]
        return self.globals_cache[key]

    def call(self, fn, args):
        env = [self.global_values(fn.globals), {}]
        for (name, ty, _), value in zip(fn.params, args):
            env[1][name] = coerce(value, ty)
        try:
            self.block(fn.body, env)
        except ReturnSig as r:
            return coerce(r.value, fn.ret)
        raise RuntimeError("reference: %s fell off its end" % fn.name)

    def lookup(self, env, name):
        for scope in reversed(env):
            if name in scope:
                return scope
        raise KeyError(name)

    def block(self, stmts, env):
        env.append({})
        try:
            for s in stmts:
                self.stmt(s, env)
        finally:
            env.pop()

    def stmt(self, s, env):
        self.tick()
        if isinstance(s, Let):
            env[-1][s.name] = coerce(self.ev(s.e, env), s.ty) if s.e is not None else None
        elif isinstance(s, Assign):
            scope = self.lookup(env, s.name)
            value = self.ev(s.e, env)
            if s.op != "=":
                value = self.arith(s.op[0], scope[s.name], value, s.ty)
            scope[s.name] = coerce(value, s.ty)
        elif isinstance(s, If):
            if self.ev(s.cond, env):
                self.block(s.then, env)
            elif s.els is not None:
                self.block(s.els, env)
        elif isinstance(s, For):
            bounds = [self.ev(b, env) for b in s.bounds]
            if s.form == "dots":
                it = range(bounds[0], bounds[1])
            else:
                it = range(*bounds)
            for i in it:
                env.append({s.var: i})
                try:
                    self.block(s.body, env)
                except BreakSig:
                    break
                except ContinueSig:
                    continue
                finally:
                    env.pop()
        elif isinstance(s, While):
            while self.ev(s.cond, env):
                self.tick()
                try:
                    self.block(s.body, env)
                except BreakSig:
                    break
                except ContinueSig:
                    continue
        elif isinstance(s, Break):
            raise BreakSig()
        elif isinstance(s, Continue):
            raise ContinueSig()
        elif isinstance(s, Return):
            raise ReturnSig(self.ev(s.e, env))
        elif isinstance(s, ExprStmt):
            self.ev(s.e, env)
        else:
            raise TypeError(s)

    def arith(self, op, l, r, ty):
        """l op r for + - * / % ** with the result type ty (the operands' promotion). A
        division by zero leaves the contract: that argument set is not compared (an optimized
        program may skip an unused division, docs/passes.md "dce")."""
        try:
            return self.arith2(op, l, r, ty)
        except ZeroDivisionError:
            raise OutOfContract("division by zero")

    def arith2(self, op, l, r, ty):
        if ty == TENSOR:
            return {"+": lambda: l + r, "-": lambda: l - r, "*": lambda: l * r}[op]()
        if op not in INT_OPS:
            raise ValueError(op)
        if ty == INT:
            return check_int(INT_OPS[op](l, r))
        return check_float(FLOAT_OPS[op](float(l), float(r)))

    def ev(self, e, env):
        if isinstance(e, Lit):
            return e.value
        if isinstance(e, Var):
            v = self.lookup(env, e.name)[e.name]
            if v is None:
                raise RuntimeError("reference: %s read before it was assigned" % e.name)
            return v
        if isinstance(e, Un):
            v = self.ev(e.e, env)
            if e.op == "!":
                return not v
            if e.op == "+":
                return v
            if e.ty == INT:
                return check_int(-v)
            return -v
        if isinstance(e, Bin):
            op = e.op
            if op == "&&":
                return bool(self.ev(e.l, env)) and bool(self.ev(e.r, env))
            if op == "||":
                return bool(self.ev(e.l, env)) or bool(self.ev(e.r, env))
            l = self.ev(e.l, env)
            r = self.ev(e.r, env)
            if op in ("==", "!=", "<", "<=", ">", ">="):
                return {"==": l == r, "!=": l != r, "<": l < r, "<=": l <= r, ">": l > r,
                        ">=": l >= r}[op]
            return self.arith(op, l, r, e.ty)
        if isinstance(e, Cast):
            v = self.ev(e.e, env)
            if e.to == "float":
                return float(v)
            if e.to == "int":
                return check_int(int(v))
            if e.to == "trit":
                return trit_of(v)
            raise ValueError(e.to)
        if isinstance(e, Call):
            params = e.fn.params
            values = {}
            for i, (name, a) in enumerate(e.args):
                values[name if name else params[i][0]] = self.ev(a, env)
            args = []
            for name, ty, default in params:
                args.append(values[name] if name in values else self.ev(default, [{}]))
            return self.call(e.fn, args)
        if isinstance(e, Builtin):
            t = self.torch
            args = [self.ev(a, env) for a in e.args]
            return {"relu": t.relu, "abs": t.abs, "tanh": t.tanh}[e.name](*args)
        raise TypeError(e)


# ---- generator ------------------------------------------------------------------------------

ODD_NAMES = ["t", "t_2", "t_3", "pass", "lambda", "None", "True", "def", "class", "yield",
             "global", "self", "x_2", "i_2", "len", "object", "torch"]


class VarInfo:
    def __init__(self, ty, assignable=True, bound=False, is_global=False, runtime=False):
        self.ty, self.assignable, self.bound = ty, assignable, bound
        self.is_global = is_global
        self.runtime = runtime  # a parameter or a for variable: never a constant


class FnCtx:
    def __init__(self, ret, tensor=False, globals_scope=None):
        self.ret = ret
        self.scopes = [dict(globals_scope or {}), {}]
        self.loop_depth = 0
        self.tensor = tensor
        self.counter = 0
        self.early_returns = True  # helpers without them can be inlined (docs/passes.md)

    def visible(self):
        seen = {}
        for scope in self.scopes:
            seen.update(scope)
        return seen


class Gen:
    def __init__(self, rng, features):
        self.rng = rng
        self.f = features
        self.ctx = None
        self.helpers = []
        self.global_scope = {}
        self.global_lets = []
        self.file_names = set()  # odd global and helper names already used in this file

    def new_file(self):
        self.file_names = set()

    def odd_name(self, pool, fallback):
        if self.on("odd_module_names") and self.chance(0.3):
            free = [n for n in pool if n not in self.file_names]
            if free:
                name = self.rng.choice(free)
                self.file_names.add(name)
                return name
        return fallback

    def make_globals(self, prefix):
        """Top-level constants (LANGUAGE.md §4), from literals and earlier constants; some
        are named like the emitter's temporaries."""
        self.global_scope = {}
        self.global_lets = []
        if not self.on("globals"):
            return
        saved = self.f
        self.f = self.f - {"zerodiv", "calls", "trit", "shortcircuit"}
        for k in range(self.rng.choice([0, 0, 1, 2, 3])):
            name = self.odd_name(["t", "t_2", "t_3", "t_4", "i", "x_2", "K", "F", "nn", "math"],
                                 "%s_G%d" % (prefix, k))
            for _ in range(5):
                self.ctx = FnCtx(INT, globals_scope=self.global_scope)
                ty = self.scalar_type()
                e = self.expr(ty, 2)
                try:
                    Interp().global_values(self.global_lets + [Let(name, None, e, ty)])
                    break
                except OutOfContract:
                    e = None
            if e is None:
                ty, e = INT, Lit(k, INT, str(k))
            self.global_lets.append(Let(name, None, e, ty))
            self.global_scope[name] = VarInfo(ty, assignable=False, is_global=True)
        self.f = saved

    def on(self, feature):
        return feature in self.f

    def chance(self, p):
        return self.rng.random() < p

    def floats(self):
        """Scalar floats in this function (--exclude float leaves them to tensor fns)."""
        return self.on("float") or (self.ctx is not None and self.ctx.tensor)

    # -- names and variables
    def fresh(self, prefix="v"):
        if self.on("odd_names") and self.chance(0.08):
            name = self.rng.choice(ODD_NAMES)
            if name not in self.ctx.visible() and name not in self.file_names:
                return name
        self.ctx.counter += 1
        return "%s%d" % (prefix, self.ctx.counter)

    def declare(self, name, info):
        self.ctx.scopes[-1][name] = info

    def vars_of(self, ty, assignable=False):
        return [n for n, v in self.ctx.visible().items()
                if v.ty == ty and (v.assignable or not assignable)]

    # -- literals
    def int_lit(self, lo=-12, hi=12, big=True):
        v = self.rng.randint(lo, hi)
        if big and self.chance(0.05):
            v = self.rng.choice([100, 255, 1000, 4096, 65535, 1 << 20])
        neg = v < 0
        a = abs(v)
        text = str(a)
        if self.on("literal_forms") and self.chance(0.15):
            # `012` is twelve: leading zeros are decimal (docs/language.md)
            text = self.rng.choice([hex(a), bin(a), oct(a), "0" + str(a),
                                    "{:_}".format(a) if a >= 1000 else str(a)])
        lit = Lit(a, INT, text)
        return Un("-", lit, INT) if neg else lit

    def float_lit(self):
        exact = [0.0, 0.5, 0.25, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 0.125, 10.0, 6.5]
        inexact = [0.1, 0.2, 0.3, 1.1, 2.7, 3.14159, 1e-3, 0.7]
        pool = exact + (inexact if self.on("inexact") else [])
        v = self.rng.choice(pool)
        text = repr(v)
        if self.on("literal_forms") and self.chance(0.2):
            if v == int(v):
                text = self.rng.choice(["%d." % v, "%de0" % v, "%d.0E0" % v])
            elif 0 < v < 1:
                text = repr(v)[1:] if repr(v).startswith("0.") else repr(v)
            else:
                text = "%re-0" % (v,) if "e" not in repr(v) else repr(v)
        lit = Lit(v, FLOAT, text)
        if self.chance(0.25) and v != 0.0:
            return Un("-", lit, FLOAT)
        return lit

    # -- expressions
    def expr(self, ty, depth=2):
        if ty == INT:
            return self.int_expr(depth)
        if ty == FLOAT:
            return self.float_expr(depth)
        if ty == BOOL:
            return self.bool_expr(depth)
        return self.tensor_expr(depth)

    def leaf(self, ty):
        names = self.vars_of(ty)
        if names and self.chance(0.75):
            return Var(self.rng.choice(names), ty)
        if ty == INT:
            return self.int_lit()
        if ty == FLOAT:
            return self.float_lit()
        return self.bool_lit()

    def bool_lit(self):
        v = self.chance(0.5)
        return Lit(v, BOOL, "true" if v else "false")

    def call_expr(self, ty, depth):
        cands = [h for h in self.helpers if h.ret == ty]
        if not cands:
            return None
        h = self.rng.choice(cands)
        args = []
        named = False
        for i, (name, pty, default) in enumerate(h.params):
            if default is not None and self.chance(0.4):
                named = True  # what follows an omitted default must be named
                continue
            e = self.expr(pty if pty != FLOAT or self.chance(0.7) else INT, max(depth - 1, 0))
            if named or (i > 0 and self.chance(0.2)):
                named = True
                args.append((name, e))
            else:
                args.append((None, e))
        first_named = next((i for i, a in enumerate(args) if a[0]), len(args))
        tail = args[first_named:]
        self.rng.shuffle(tail)  # named arguments in any order
        return Call(h, args[:first_named] + tail, ty)

    def nonzero_int(self, depth):
        if self.on("zerodiv") and self.chance(0.1):
            # may be zero: then the reference skips the argument set, but a division that
            # does not run (a loop that runs 0 times, a branch not taken) must not raise
            return self.int_expr(max(depth - 1, 0))
        r = self.rng.random()
        if r < 0.4 or depth <= 0:
            v = self.rng.choice([1, 2, 3, 4, 5, 7, 9, 16])
            lit = Lit(v, INT, str(v))
            return Un("-", lit, INT) if self.chance(0.3) else lit
        k = self.rng.randint(2, 9)
        inner = Bin("%", self.int_expr(depth - 1), Lit(k, INT, str(k)), INT)
        if r < 0.75:
            c = self.rng.randint(1, 3)
            return Bin("+", inner, Lit(c, INT, str(c)), INT)  # in [c, k - 1 + c]
        return Bin("-", inner, Lit(k, INT, str(k)), INT)  # in [-k, -1]

    def nonzero_float(self, depth):
        """A float divisor that is never zero. Without "inexact", a power of two: a quotient
        of constants is then the same in float32 and float64, so the -O1 float32 constant
        folding (see the report) does not hide other bugs."""
        if self.on("zerodiv") and self.on("inexact") and self.chance(0.1):
            return self.float_expr(max(depth - 1, 0))
        r = self.rng.random()
        if r < 0.4 or depth <= 0 or not self.on("inexact"):
            v = self.rng.choice([0.5, 2.0, 4.0, 0.25] + ([1.5, 3.0, 0.1, 0.3, 7.0]
                                                         if self.on("inexact") else []))
            lit = Lit(v, FLOAT, repr(v))
            return Un("-", lit, FLOAT) if self.chance(0.3) else lit
        if r < 0.7:
            x = self.float_expr(depth - 1)
            return Bin("+", Bin("*", x, x, FLOAT), Lit(0.5, FLOAT, "0.5"), FLOAT)
        return Bin("+", Cast("float", Bin("%", self.int_expr(depth - 1), Lit(5, INT, "5"), INT),
                             FLOAT), Lit(1.5, FLOAT, "1.5"), FLOAT)

    def int_expr(self, depth):
        if depth <= 0 or self.chance(0.25):
            return self.leaf(INT)
        r = self.rng.random()
        if r < 0.45:
            op = self.rng.choice(["+", "-", "*", "+", "-"])
            return Bin(op, self.int_expr(depth - 1), self.int_expr(depth - 1), INT)
        if r < 0.6 and self.on("intdiv"):
            op = self.rng.choice(["/", "%"])
            return Bin(op, self.int_expr(depth - 1), self.nonzero_int(depth - 1), INT)
        if r < 0.67:
            return Un("-", self.int_expr(depth - 1), INT)
        if r < 0.72 and self.on("pow"):
            k = self.rng.randint(0, 3)
            base = self.int_expr(depth - 1)
            # A power of a constant is a constant the checker folds: one past int32
            # (65_535 ** 2, (255 * 11) ** 3) is LiteralDoesNotFit, not a program to compare.
            value = constant_int(base)
            if value is not None and abs(value) ** k > INT32_MAX:
                k = 1 if abs(value) <= INT32_MAX else 0
            return Bin("**", base, Lit(k, INT, str(k)), INT)
        if r < 0.78 and self.floats():
            return Cast("int", self.float_expr(depth - 1), INT)
        if r < 0.82:
            b = self.bool_expr(depth - 1)
            return Cast("int", b, INT)
        if r < 0.86 and self.on("trit"):
            names = [n for n, v in self.ctx.visible().items() if v.ty == INT and v.runtime]
            if names:
                src = self.float_expr(depth - 1) if self.floats() and self.chance(0.6) \
                    else self.int_expr(depth - 1)
                # not a constant: trit() of a constant must be -1, 0 or 1, and a constant
                # next to a trit takes the trit type (LANGUAGE.md §3; top-level constants,
                # and for trit() lets of constants, count as literals)
                v = Var(self.rng.choice(names), INT)
                src = Bin("*", src, v, src.ty)
                op = self.rng.choice(["+", "*", "-"])
                t = Cast("trit", src, INT)
                return Bin(op, t, v, INT) if self.chance(0.5) else Bin(op, v, t, INT)
        if r < 0.92 and self.on("calls"):
            c = self.call_expr(INT, depth)
            if c is not None:
                return c
        return self.leaf(INT)

    def float_expr(self, depth):
        if depth <= 0 or self.chance(0.25):
            if self.chance(0.15):
                return Cast("float", self.leaf(INT), FLOAT)
            return self.leaf(FLOAT)
        r = self.rng.random()
        if r < 0.45:
            op = self.rng.choice(["+", "-", "*"])
            a, b = self.float_expr(depth - 1), self.num_expr(depth - 1)
            return Bin(op, a, b, FLOAT) if self.chance(0.5) else Bin(op, b, a, FLOAT)
        if r < 0.58:
            a = self.num_expr(depth - 1)
            d = self.nonzero_float(depth - 1)
            if self.chance(0.3) and self.on("inexact"):
                a, d = self.float_expr(depth - 1), self.nonzero_int(depth - 1)
            op = "%" if self.on("floatmod") and self.chance(0.3) else "/"
            return Bin(op, a, d, FLOAT)
        if r < 0.65:
            return Un("-", self.float_expr(depth - 1), FLOAT)
        if r < 0.72:
            return Cast("float", self.int_expr(depth - 1), FLOAT)
        if r < 0.77 and self.on("pow"):
            k = self.rng.choice([0, 1, 2, 3])
            e = Lit(k, INT, str(k)) if self.chance(0.6) else Lit(float(k), FLOAT, "%d.0" % k)
            base = self.float_expr(depth - 1)
            return Bin("**", base, e, FLOAT)
        if r < 0.85 and self.on("calls"):
            c = self.call_expr(FLOAT, depth)
            if c is not None:
                return c
        return self.leaf(FLOAT)

    def num_expr(self, depth):
        if not self.floats() or self.chance(0.4):
            return self.int_expr(depth)
        return self.float_expr(depth)

    def bool_expr(self, depth):
        if depth <= 0 or self.chance(0.2):
            return self.leaf(BOOL)
        r = self.rng.random()
        cmp = self.rng.choice(["==", "!=", "<", "<=", ">", ">="])
        if r < 0.4:
            a = self.int_expr(depth - 1)
            b = self.int_expr(depth - 1) if self.chance(0.7) else self.num_expr(depth - 1)
            return Bin(cmp, a, b, BOOL)
        if r < 0.5 and self.floats():
            return Bin(cmp, self.float_expr(depth - 1), self.num_expr(depth - 1), BOOL)
        if r < 0.68:
            op = self.rng.choice(["&&", "||"])
            return Bin(op, self.bool_expr(depth - 1), self.bool_expr(depth - 1), BOOL)
        if r < 0.76:
            return Un("!", self.bool_expr(depth - 1), BOOL)
        if r < 0.82:
            op = self.rng.choice(["==", "!="])
            return Bin(op, self.bool_expr(depth - 1), self.bool_expr(depth - 1), BOOL)
        if r < 0.9 and self.on("shortcircuit"):
            return self.guarded_division(depth)
        if r < 0.95 and self.on("calls"):
            c = self.call_expr(BOOL, depth)
            if c is not None:
                return c
        return self.leaf(BOOL)

    def guarded_division(self, depth):
        """`d != 0 && n / d > k` or `d == 0 || n % d == k`: the division may only run when
        the guard lets it (LANGUAGE.md: && and || short-circuit)."""
        d = self.int_expr(max(depth - 1, 0))
        n = self.int_expr(max(depth - 1, 0))
        op = self.rng.choice(["/", "%"])
        k = self.int_lit(-3, 3, big=False)
        cmp = self.rng.choice(["==", "!=", "<", ">", ">="])
        if self.floats() and self.chance(0.15):
            if not self.on("inexact"):
                op = "%"  # fmod is exact; a quotient by any int is not
            n = Cast("float", n, FLOAT)
            d = Cast("float", d, FLOAT)
            div = Bin(op, n, d, FLOAT)
            zero = Lit(0.0, FLOAT, "0.0")
        else:
            div = Bin(op, n, d, INT)
            zero = Lit(0, INT, "0")
        test = Bin(cmp, div, k, BOOL)
        if self.chance(0.5):
            return Bin("&&", Bin("!=", d, zero, BOOL), test, BOOL)
        return Bin("||", Bin("==", d, zero, BOOL), test, BOOL)

    # -- tensors
    def tensor_expr(self, depth):
        names = self.vars_of(TENSOR)
        if depth <= 0 or self.chance(0.25):
            return Var(self.rng.choice(names), TENSOR)
        r = self.rng.random()
        if r < 0.4:
            op = self.rng.choice(["+", "-", "*"])
            return Bin(op, self.tensor_expr(depth - 1), self.tensor_expr(depth - 1), TENSOR)
        if r < 0.65:
            op = self.rng.choice(["+", "-", "*", "*"])
            s = self.float_expr(1) if self.chance(0.7) else self.int_expr(1)
            t = self.tensor_expr(depth - 1)
            return Bin(op, t, s, TENSOR) if self.chance(0.6) else Bin(op, s, t, TENSOR)
        if r < 0.85:
            name = self.rng.choice(["relu", "relu", "abs", "tanh"])
            return Builtin(name, [self.tensor_expr(depth - 1)], TENSOR)
        return Un("-", self.tensor_expr(depth - 1), TENSOR)

    # -- statements
    def block(self, depth, n, new_scope=True):
        if new_scope:
            self.ctx.scopes.append({})
        out = []
        for _ in range(n):
            s, terminates = self.stmt(depth)
            if s is None:
                continue
            out.extend(s)
            if terminates:
                break
        if new_scope:
            self.ctx.scopes.pop()
        return out

    def scalar_type(self):
        if not self.floats():
            return self.rng.choice([INT, INT, INT, BOOL])
        return self.rng.choice([INT, INT, INT, FLOAT, FLOAT, BOOL])

    def stmt(self, depth):
        """Returns ([statements], terminates)."""
        ctx = self.ctx
        kinds = [("let", 22), ("assign", 26), ("swap", 8), ("if", 12 if depth < 3 else 0),
                 ("for", 8 if depth < 3 and self.on("for") else 0),
                 ("while", 5 if depth < 3 and self.on("while") else 0),
                 ("jump", 7 if ctx.loop_depth else 0),
                 ("return", 3 if self.on("return") and ctx.early_returns else 0),
                 ("exprstmt", 1 if self.on("calls") and self.helpers else 0),
                 ("uninit", 2 if self.on("uninit_let") and depth < 3 else 0),
                 ("guarded", 3 if self.on("guarded") else 0)]
        if ctx.tensor:
            kinds.append(("tensor", 30))
        total = sum(w for _, w in kinds)
        pick = self.rng.uniform(0, total)
        for kind, w in kinds:
            pick -= w
            if pick <= 0:
                break
        return getattr(self, "s_" + kind)(depth)

    def s_let(self, depth):
        ty = self.scalar_type()
        e = self.expr(ty, 2)
        annot = None
        if self.chance(0.15):
            annot = ty
            if ty == FLOAT and self.chance(0.5):
                # An int expression, constant ones included: `let y: float = 7 / 2` is
                # floor division converted, 3.0, as `y = 7 / 2` and `f(7 / 2)`.
                e = self.int_expr(2)
        name = self.fresh_or_shadow()
        self.declare(name, VarInfo(ty))
        return [Let(name, annot, e, ty)], False

    def fresh_or_shadow(self):
        if self.on("shadow") and self.chance(0.12):
            visible = [n for n, v in self.ctx.visible().items()
                       if (v.assignable or v.is_global) and v.ty != TENSOR]
            if visible:
                return self.rng.choice(visible)
        return self.fresh()

    def s_assign(self, depth):
        ty = self.scalar_type()
        names = self.vars_of(ty, assignable=True)
        if not names:
            return self.s_let(depth)
        name = self.rng.choice(names)
        if self.ctx.loop_depth and ty == INT and self.chance(0.3):
            # keep loop-carried ints small: v = (expr) % m
            m = self.rng.choice([7, 97, 1009])
            e = Bin("%", self.int_expr(2), Lit(m, INT, str(m)), INT)
            return [Assign(name, "=", e, ty)], False
        r = self.rng.random()
        if ty == BOOL or r < 0.55:
            if ty == FLOAT and self.chance(0.2):
                e = self.int_expr(2)  # an int widened into a float variable
            else:
                e = self.expr(ty, 2)
            return [Assign(name, "=", e, ty)], False
        op = self.rng.choice(["+=", "-=", "*=", "/="])
        if op == "/=":
            e = self.nonzero_int(1) if ty == INT else self.nonzero_float(1)
        elif op == "*=" and ty == INT:
            e = self.int_lit(-3, 3, big=False)
        else:
            e = self.expr(ty, 1) if ty == INT or self.chance(0.7) else self.int_expr(1)
        return [Assign(name, op, e, ty)], False

    def s_swap(self, depth):
        ty = self.scalar_type() if not self.ctx.tensor or self.chance(0.3) else TENSOR
        names = self.vars_of(ty, assignable=True)
        if len(names) < 2:
            return self.s_assign(depth)
        self.rng.shuffle(names)
        if len(names) >= 3 and self.chance(0.4):
            a, b, c = names[:3]
            t = self.fresh("tmp")
            out = [Let(t, None, Var(a, ty), ty), Assign(a, "=", Var(b, ty), ty),
                   Assign(b, "=", Var(c, ty), ty), Assign(c, "=", Var(t, ty), ty)]
            self.declare(t, VarInfo(ty))
            return out, False
        a, b = names[:2]
        if ty == INT and self.chance(0.25):
            # arithmetic swap: a = a + b; b = a - b; a = a - b
            return [Assign(a, "=", Bin("+", Var(a, ty), Var(b, ty), ty), ty),
                    Assign(b, "=", Bin("-", Var(a, ty), Var(b, ty), ty), ty),
                    Assign(a, "=", Bin("-", Var(a, ty), Var(b, ty), ty), ty)], False
        t = self.fresh("tmp")
        out = [Let(t, None, Var(a, ty), ty), Assign(a, "=", Var(b, ty), ty),
               Assign(b, "=", Var(t, ty), ty)]
        if ty != BOOL and ty != TENSOR and self.chance(0.4):
            # b takes the new a, computed from both old values
            out[1] = Assign(a, "=", Bin("+", Var(b, ty), Var(a, ty), ty), ty)
        self.declare(t, VarInfo(ty))
        return out, False

    def s_if(self, depth):
        cond = self.bool_expr(2)
        then = self.block(depth + 1, self.rng.randint(1, 4))
        els = None
        node = If(cond, then, None)
        if self.chance(0.6):
            if self.chance(0.3):
                inner, _ = self.s_if(depth + 1)
                inner[0].chained = True
                els = inner
            else:
                els = self.block(depth + 1, self.rng.randint(1, 4))
        node.els = els
        return [node], terminates(then) and els is not None and terminates(els)

    def bound(self):
        """An int expression with a small value, for loop bounds."""
        r = self.rng.random()
        bounded = [n for n, v in self.ctx.visible().items() if v.bound]
        if r < 0.35 or (r < 0.7 and not bounded):
            return self.int_lit(-1, 6, big=False)
        if r < 0.7:
            return Var(self.rng.choice(bounded), INT)
        k = self.rng.randint(1, 7)
        return Bin("%", self.int_expr(1), Lit(k, INT, str(k)), INT)

    def s_for(self, depth):
        r = self.rng.random()
        if r < 0.5:
            form, bounds = "range", [self.bound()]
        elif r < 0.75:
            form, bounds = "range", [self.bound(), self.bound()]
        elif r < 0.85:
            step = self.rng.choice([1, 2, 3])
            bounds = [self.bound(), self.bound(), Lit(step, INT, str(step))]
            if self.chance(0.5):
                bounds = [bounds[1], bounds[0], Un("-", Lit(step, INT, str(step)), INT)]
            form = "range"
        else:
            form, bounds = "dots", [self.bound(), self.bound()]
        if self.on("shadow") and self.chance(0.1) and self.vars_of(INT, assignable=True):
            var = self.rng.choice(self.vars_of(INT, assignable=True))
        else:
            var = self.fresh("i")
        self.ctx.scopes.append({var: VarInfo(INT, assignable=False, bound=True, runtime=True)})
        self.ctx.loop_depth += 1
        body = []
        if self.on("loopvar_assign") and self.chance(0.1):
            self.ctx.scopes[-1][var].assignable = True
            body.append(Assign(var, "=", Bin("+", Var(var, INT), self.int_lit(1, 5), INT), INT))
            self.ctx.scopes[-1][var].bound = False
        body += self.block(depth + 1, self.rng.randint(1, 5))
        self.ctx.loop_depth -= 1
        self.ctx.scopes.pop()
        return [For(var, form, bounds, body)], False

    def s_while(self, depth):
        k = self.fresh("k")
        out = []
        if self.chance(0.6):
            out.append(Let(k, None, Lit(0, INT, "0"), INT))
            cond = Bin("<", Var(k, INT), self.bound(), BOOL)
            step = Assign(k, "+=", Lit(1, INT, "1"), INT) if self.chance(0.5) else \
                Assign(k, "=", Bin("+", Var(k, INT), Lit(1, INT, "1"), INT), INT)
            step.e.frozen = True  # clone() must not turn it into k - 1
        else:
            out.append(Let(k, None, self.bound(), INT))
            cond = Bin(">", Var(k, INT), Lit(0, INT, "0"), BOOL)
            step = Assign(k, "-=", Lit(1, INT, "1"), INT)
        self.declare(k, VarInfo(INT, assignable=False, bound=True))
        if self.chance(0.3):
            extra = self.bool_expr(1)
            cond = Bin("&&", cond, extra, BOOL) if self.chance(0.5) else \
                Bin("&&", extra, cond, BOOL)
            cond.frozen = True  # clone() must not make it ||
        self.ctx.loop_depth += 1
        body = [step] + self.block(depth + 1, self.rng.randint(1, 4))
        self.ctx.loop_depth -= 1
        out.append(While(cond, body))
        return out, False

    def s_jump(self, depth):
        jump = Break() if self.chance(0.5) else Continue()
        if self.chance(0.3):
            return [jump], True
        pre = self.block(depth + 1, self.rng.randint(0, 2))
        return [If(self.bool_expr(2), pre + [jump], None)], False

    def s_return(self, depth):
        e = self.expr(self.ctx.ret, 2)
        if self.ctx.ret == FLOAT and self.chance(0.2):
            e = self.int_expr(2)
        if depth > 0 and self.chance(0.25):
            return [Return(e)], True
        return [If(self.bool_expr(2), [Return(e)], None)], False

    def s_exprstmt(self, depth):
        h = self.rng.choice(self.helpers)
        c = self.call_expr(h.ret, 1)
        return ([ExprStmt(c)] if c is not None else []), False

    def s_guarded(self, depth):
        """`if d != 0 { v = n / d }`: the division must stay under its guard."""
        names = self.vars_of(INT, assignable=True)
        if not names:
            return self.s_let(depth)
        target = self.rng.choice(names)
        d = self.int_expr(1)
        n = self.int_expr(1)
        op = self.rng.choice(["/", "%"])
        zero = Lit(0, INT, "0")
        div = Assign(target, "=", Bin(op, n, d, INT), INT)
        other = self.block(depth + 1, self.rng.randint(0, 2))
        if self.chance(0.5):
            cond = Bin("!=", d, zero, BOOL) if self.chance(0.5) else Bin("!=", zero, d, BOOL)
            return [If(cond, [div] + other, None)], False
        return [If(Bin("==", d, zero, BOOL), other or [Assign(target, "=", zero, INT)],
                   [div])], False

    def s_uninit(self, depth):
        ty = self.scalar_type()
        name = self.fresh()
        then = [Assign(name, "=", self.expr(ty, 2), ty)]
        els = [Assign(name, "=", self.expr(ty, 2), ty)]
        cond = self.bool_expr(2)
        # declared after the condition and the branches' values are made: none reads it
        self.declare(name, VarInfo(ty))
        return [Let(name, ty, None, ty), If(cond, then, els)], False

    def s_tensor(self, depth):
        names = self.vars_of(TENSOR, assignable=True)
        e = self.tensor_expr(2)
        if names and self.chance(0.6):
            name = self.rng.choice(names)
            if self.chance(0.3):
                op = self.rng.choice(["+=", "-=", "*="])
                e = self.tensor_expr(1) if self.chance(0.6) else self.float_expr(1)
                return [Assign(name, op, e, TENSOR)], False
            return [Assign(name, "=", e, TENSOR)], False
        name = self.fresh("u")
        self.declare(name, VarInfo(TENSOR))
        return [Let(name, None, e, TENSOR)], False

    # -- functions
    def params(self, n_int, n_float, n_bool, bound_ints=0, defaults=False):
        """Parameters in random order; the last ones may have defaults. Bound parameters
        (loop bounds, never assigned) are recorded in self.bound_params."""
        ps = []
        taken = set(self.ctx.visible())

        def name(prefix):
            n = self.fresh(prefix)
            while n in taken:
                n = self.fresh(prefix)
            taken.add(n)
            return n

        for _ in range(bound_ints):
            ps.append((name("n"), INT, True))
        for ty, n in ((INT, n_int), (FLOAT, n_float), (BOOL, n_bool)):
            for _ in range(n):
                ps.append((name("a" if ty == INT else "x" if ty == FLOAT else "c"), ty, False))
        self.rng.shuffle(ps)
        n_defaults = self.rng.choice([0, 0, 1, 2]) if defaults else 0
        out = []
        for i, (name, ty, bound) in enumerate(ps):
            default = None
            if i >= len(ps) - n_defaults:
                default = self.int_lit(-5, 5) if ty == INT else \
                    self.float_lit() if ty == FLOAT else self.bool_lit()
            out.append((name, ty, default))
            if bound:
                self.bound_params.add(name)
            self.declare(name, VarInfo(ty, assignable=not bound, bound=bound, runtime=True))
        return out

    def helper(self, name):
        self.ctx = FnCtx(INT, globals_scope=self.global_scope)
        ret = self.scalar_type()
        self.ctx = FnCtx(ret, globals_scope=self.global_scope)
        self.ctx.early_returns = self.chance(0.4)
        self.bound_params = set()
        params = self.params(self.rng.randint(0, 2),
                             self.rng.randint(0, 2) if self.floats() else 0,
                             self.rng.randint(0, 1), defaults=True)
        if not params:
            params = self.params(1, 0, 0)
        body = self.block(1, self.rng.randint(1, 6), new_scope=False)
        if not terminates(body):
            body.append(Return(self.expr(ret, 2)))
        return FnDef(name, params, ret, body, self.bound_params)

    def entry(self, name):
        self.ctx = FnCtx(INT, globals_scope=self.global_scope)
        ret = self.rng.choice([INT, INT, FLOAT]) if self.floats() else INT
        self.ctx = FnCtx(ret, globals_scope=self.global_scope)
        self.bound_params = set()
        params = self.params(self.rng.randint(1, 3),
                             self.rng.randint(0, 2) if self.floats() else 0,
                             self.rng.randint(0, 1), bound_ints=self.rng.randint(1, 2))
        body = self.block(0, self.rng.randint(5, 14), new_scope=False)
        if not terminates(body):
            body.append(Return(self.checksum(ret)))
        return FnDef(name, params, ret, body, self.bound_params)

    def checksum(self, ret):
        """Every visible variable, each with its own coefficient."""
        terms = []
        for i, (name, info) in enumerate(sorted(self.ctx.visible().items())):
            coef = Lit(i % 11 + 1, INT, str(i % 11 + 1))
            if info.ty == INT:
                terms.append(Bin("*", Var(name, INT), coef, INT))
            elif info.ty == BOOL:
                terms.append(Bin("*", Cast("int", Var(name, BOOL), INT), coef, INT))
            elif info.ty == FLOAT:
                if ret == FLOAT:
                    terms.append(Bin("*", Var(name, FLOAT), coef, FLOAT))
                else:
                    terms.append(Cast("int", Bin("*", Var(name, FLOAT), coef, FLOAT), INT))
        if not terms:
            return self.expr(ret, 2)
        e = terms[0]
        for t in terms[1:]:
            ty = FLOAT if FLOAT in (e.ty, t.ty) else INT
            e = Bin(self.rng.choice(["+", "-"]), e, t, ty)
        return e

    def tensor_entry(self, name):
        self.ctx = FnCtx(TENSOR, tensor=True, globals_scope=self.global_scope)
        self.bound_params = set()
        params = [("x", TENSOR, None), ("y", TENSOR, None)]
        self.declare("x", VarInfo(TENSOR))
        self.declare("y", VarInfo(TENSOR))
        params += self.params(0, 1, 0, bound_ints=1)
        body = self.block(0, self.rng.randint(4, 10), new_scope=False)
        if not terminates(body):
            body.append(Return(self.tensor_expr(2)))
        return FnDef(name, params, TENSOR, body, self.bound_params)

    def clone(self, orig, name):
        """A copy of an earlier helper, identical or with one small difference (a literal, an
        operator, a default, the return type, local names): -Os merges identical functions
        (docs/passes.md, merge-functions) and must merge only those."""
        memo = {id(h): h for h in self.helpers if h is not orig}
        fn = copy.deepcopy(orig, memo)
        fn.name = name
        kind = self.rng.choice(["same", "literal", "literal", "op", "op", "default", "ret",
                                "rename"])
        slots = list(expr_slots([fn]))
        if kind == "literal":
            lits = [(h, k, e) for h, k, e in slots if isinstance(e, Lit)]
            if lits:
                h, k, e = self.rng.choice(lits)
                set_slot(h, k, changed_literal(e))
        elif kind == "op":
            swaps = {"+": "-", "-": "+", "*": "+", "<": "<=", "<=": "<", ">": ">=", ">=": ">",
                     "==": "!=", "!=": "==", "&&": "||", "||": "&&"}
            bins = [e for _, _, e in slots if isinstance(e, Bin) and e.op in swaps
                    and e.ty != TENSOR and not getattr(e, "frozen", False)]
            if bins:
                e = self.rng.choice(bins)
                e.op = swaps[e.op]
        elif kind == "default":
            with_default = [i for i, p in enumerate(fn.params) if p[2] is not None]
            if with_default:
                i = self.rng.choice(with_default)
                pname, pty, default = fn.params[i]
                fn.params[i] = (pname, pty, changed_literal(default))
        elif kind == "ret" and fn.ret == INT:
            fn.ret = FLOAT
        elif kind == "rename":
            params = set(p[0] for p in fn.params)
            locals_ = set()
            for stmts in stmt_lists([fn]):
                for st in stmts:
                    if isinstance(st, Let) and st.name not in params and \
                            st.name not in self.global_scope:
                        locals_.add(st.name)
            if locals_:
                old = self.rng.choice(sorted(locals_))
                rename(fn, old, old + "_r")
        return fn

    def program(self, prefix):
        """[helpers..., entry]: the entry is last."""
        self.helpers = []
        self.make_globals(prefix)
        fns = []
        if self.on("calls"):
            for j in range(self.rng.choice([0, 1, 1, 2, 3])):
                name = self.odd_name(["t", "t_2", "t_3", "t_5", "F", "torch", "nn", "tritonrt",
                                      "math", "len", "i", "x_2", "main_"],
                                     "%s_h%d" % (prefix, j))
                if self.helpers and self.on("clones") and self.chance(0.35):
                    h = self.clone(self.rng.choice(self.helpers), name)
                else:
                    h = self.helper(name)
                fns.append(h)
                self.helpers.append(h)
        if self.on("tensor") and self.chance(0.15):
            fns.append(self.tensor_entry(prefix + "_main"))
        else:
            fns.append(self.entry(prefix + "_main"))
        for f in fns:
            f.globals = self.global_lets
        if self.on("layout"):
            self.decorate(fns)
        return fns

    def decorate(self, fns):
        """Line breaks inside expressions, `;`-joined statements, comments, `else` on its
        own line: the same program, laid out as LANGUAGE.md §1 allows."""
        for stmts in stmt_lists(fns):
            for st in stmts:
                if isinstance(st, SIMPLE):
                    st.semi = self.chance(0.1)
                    st.trailing_semi = self.chance(0.05)
                    st.comment = self.chance(0.05)
                if isinstance(st, If):
                    st.else_nl = self.chance(0.2)
        for _, _, e in expr_slots(fns):
            if isinstance(e, Bin) and not hasattr(e, "brk"):
                r = self.rng.random()
                e.brk = "after" if r < 0.04 else "before" if r < 0.08 else \
                    "comment" if r < 0.1 else None


def changed_literal(e):
    """Another literal of e's type (e: a Lit or -Lit), never zero where e was not."""
    neg = isinstance(e, Un)
    lit = e.e if neg else e
    if lit.ty == BOOL:
        return Lit(not lit.value, BOOL, "false" if lit.value else "true")
    if lit.ty == INT:
        v = lit.value + 1
        new = Lit(v, INT, str(v))
    else:
        v = lit.value + 0.5
        new = Lit(v, FLOAT, repr(v))
    return Un("-", new, e.ty) if neg else new


def rename(fn, old, new):
    """Renames every local `old` of fn (not a parameter) to `new`."""
    def in_expr(e):
        for x in walk(e):
            if isinstance(x, Var) and x.name == old:
                x.name = new
    for stmts in stmt_lists([fn]):
        for st in stmts:
            if isinstance(st, (Let, Assign)) and st.name == old:
                st.name = new
            if isinstance(st, For) and st.var == old:
                st.var = new
    for _, _, e in expr_slots([fn]):
        in_expr(e)


def walk(e):
    yield e
    for attr in ("e", "l", "r"):
        child = getattr(e, attr, None)
        if child is not None and not isinstance(child, (str, int, float, bool)):
            yield from walk(child)
    for a in getattr(e, "args", None) or []:
        yield from walk(a[1] if isinstance(a, tuple) else a)


def terminates(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (Break, Continue, Return)):
        return True
    if isinstance(last, If):
        return terminates(last.then) and last.els is not None and terminates(last.els)
    return False


# ---- arguments and comparison ---------------------------------------------------------------

def make_args(rng, fn, torch_mod):
    args = []
    for name, ty, _ in fn.params:
        if ty == INT:
            if name in fn.bound_params:
                args.append(rng.randint(-2, 7))
            else:
                args.append(rng.choice([rng.randint(-15, 15), rng.randint(-3, 3), 0, 1, -1,
                                        rng.randint(-1000, 1000)]))
        elif ty == FLOAT:
            args.append(rng.choice([rng.uniform(-5, 5), rng.choice([-2.5, -1.0, -0.5, 0.0,
                                                                     0.5, 1.5, 3.0]),
                                    round(rng.uniform(-10, 10), 2)]))
        elif ty == BOOL:
            args.append(rng.random() < 0.5)
        else:
            g = torch_mod.Generator().manual_seed(rng.randint(0, 1 << 30))
            args.append(torch_mod.randn(5, generator=g))
    return args


def same(expected, got, ty, rtol, torch_mod):
    if ty == TENSOR:
        if not isinstance(got, torch_mod.Tensor) or got.shape != expected.shape or \
                got.dtype != expected.dtype:
            return False
        return bool(torch_mod.allclose(got, expected, rtol=1e-5, atol=1e-6, equal_nan=True))
    if ty == BOOL:
        return isinstance(got, bool) and got == expected
    if ty == INT:
        return isinstance(got, int) and not isinstance(got, bool) and got == expected
    if not isinstance(got, float):
        return False  # a float-typed result is a Python float (conversions are explicit)
    if got == expected:
        return True
    return abs(got - expected) <= rtol * max(abs(got), abs(expected))


def show(v):
    if hasattr(v, "tolist"):
        return "tensor(%s)" % v.tolist()
    return repr(v)


class CallTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CallTimeout("call ran longer than %gs (a loop that does not end?)" % CALL_TIMEOUT_S)


def timed_call(f, args):
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CALL_TIMEOUT_S)
    try:
        return f(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def load_module(path, tag):
    spec = importlib.util.spec_from_file_location("difftest_%s" % tag, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- reducer (--reduce) ---------------------------------------------------------------------

def stmt_lists(fns):
    """Every statement list of the program, in a fixed order."""
    def visit(stmts):
        yield stmts
        for st in stmts:
            if isinstance(st, If):
                yield from visit(st.then)
                if st.els is not None:
                    yield from visit(st.els)
            elif isinstance(st, (For, While)):
                yield from visit(st.body)
    for fn in fns:
        yield from visit(fn.body)


def expr_slots(fns):
    """(holder, key) of every expression position: holder[key] or getattr(holder, key)."""
    def in_expr(holder, key, e):
        yield holder, key, e
        if isinstance(e, (Un, Cast)):
            yield from in_expr(e, "e", e.e)
        elif isinstance(e, Bin):
            yield from in_expr(e, "l", e.l)
            yield from in_expr(e, "r", e.r)
        elif isinstance(e, Call):
            for i, (_, a) in enumerate(e.args):
                yield from in_expr(e.args, i, a)
        elif isinstance(e, Builtin):
            for i, a in enumerate(e.args):
                yield from in_expr(e.args, i, a)

    for stmts in stmt_lists(fns):
        for st in stmts:
            if isinstance(st, (Let, Assign, Return, ExprStmt)) and st.e is not None:
                yield from in_expr(st, "e", st.e)
            elif isinstance(st, (If, While)):
                yield from in_expr(st, "cond", st.cond)
            elif isinstance(st, For):
                for i, b in enumerate(st.bounds):
                    yield from in_expr(st.bounds, i, b)


def set_slot(holder, key, e):
    if isinstance(holder, list):
        old = holder[key]
        holder[key] = (old[0], e) if isinstance(old, tuple) else e
    else:
        setattr(holder, key, e)


def simpler_exprs(e):
    if isinstance(e, Lit):
        if e.ty == INT and e.value not in (0, 1):
            yield Lit(0, INT, "0")
            yield Lit(1, INT, "1")
        elif e.ty == FLOAT and e.value not in (0.0, 1.0):
            yield Lit(1.0, FLOAT, "1.0")
        return
    if isinstance(e, (Un, Cast)):
        if e.e.ty == e.ty:
            yield e.e
    elif isinstance(e, Bin):
        for c in (e.l, e.r):
            if c.ty == e.ty:
                yield c
    elif isinstance(e, Builtin):
        for c in e.args:
            yield c
    if isinstance(e, Var):
        return
    if e.ty == INT:
        yield Lit(0, INT, "0")
        yield Lit(1, INT, "1")
    elif e.ty == FLOAT:
        yield Lit(1.0, FLOAT, "1.0")
        yield Lit(0.5, FLOAT, "0.5")
    elif e.ty == BOOL:
        yield Lit(True, BOOL, "true")
        yield Lit(False, BOOL, "false")


def variants(fns):
    """Smaller programs, the coarsest changes first (each a fresh deep copy)."""
    called = set()
    for holder, key, e in expr_slots(fns):
        if isinstance(e, Call):
            called.add(e.fn.name)
    for i, fn in enumerate(fns[:-1]):
        if fn.name not in called:
            yield fns[:i] + fns[i + 1:]
    n_lists = sum(1 for _ in stmt_lists(fns))
    for k in range(n_lists):
        size = len(list(stmt_lists(fns))[k])
        for j in reversed(range(size)):
            c = copy.deepcopy(fns)
            stmts = list(stmt_lists(c))[k]
            st = stmts[j]
            del stmts[j]
            yield c
            if isinstance(st, If):
                for part in (st.then, st.els):
                    if part:
                        c = copy.deepcopy(fns)
                        stmts = list(stmt_lists(c))[k]
                        stmts[j:j + 1] = copy.deepcopy(part)
                        yield c
            elif isinstance(st, (For, While)):
                c = copy.deepcopy(fns)
                stmts = list(stmt_lists(c))[k]
                stmts[j:j + 1] = [x for x in st.body if not isinstance(x, (Break, Continue))]
                yield c
            elif isinstance(st, If) and st.els is not None:
                c = copy.deepcopy(fns)
                list(stmt_lists(c))[k][j].els = None
                yield c
    n_slots = sum(1 for _ in expr_slots(fns))
    for k in range(n_slots):
        _, _, e = list(expr_slots(fns))[k]
        for m in range(len(list(simpler_exprs(e)))):
            c = copy.deepcopy(fns)
            holder, key, ce = list(expr_slots(c))[k]
            set_slot(holder, key, list(simpler_exprs(ce))[m])
            yield c


def reduce_program(run, fns, args, levels):
    """Greedy reduction of a program that fails at `levels` on `args`: the smallest program
    found that `tritonc check` accepts and that fails at the same levels."""
    def interesting(cand):
        got = run.try_program(cand, args)
        return got is not None and got[0] == levels, got

    best = fns
    best_result = run.try_program(fns, args)
    tries = 0
    changed = True
    while changed and tries < 3000:
        changed = False
        for cand in variants(best):
            tries += 1
            ok, result = interesting(cand)
            if ok:
                best, best_result = cand, result
                changed = True
                break
    return best, best_result


# ---- driver ---------------------------------------------------------------------------------

class Run:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.tritonc = os.path.abspath(args.tritonc)
        self.env = runner.tritonc_env(work)
        self.passed = self.failed = 0
        self.skipped_args = self.compared = 0
        self.torch = None
        self.file_count = 0

    def tc(self, *argv):
        try:
            return subprocess.run([self.tritonc] + list(argv), capture_output=True, text=True,
                                  env=self.env, timeout=120)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, 124, "", "tritonc ran over 120s")

    def save(self, programs_text, modules=(), file_text=None):
        """Keeps the program (repro.tri), the whole generated file it was compiled in
        (file.tri) and that file's modules, in a new directory."""
        d = tempfile.mkdtemp(prefix="tritonc_diff_")
        path = os.path.join(d, "repro.tri")
        with open(path, "w") as f:
            f.write(programs_text)
        if file_text is not None:
            with open(os.path.join(d, "file.tri"), "w") as f:
                f.write(file_text)
        for m in modules:
            if os.path.exists(m):
                shutil.copy(m, d)
        return path

    def fail(self, title, program_text, lines, modules=(), file_text=None):
        path = self.save(program_text, modules, file_text)
        print("FAIL", title)
        for line in lines:
            print("    " + line)
        print("    program (saved as %s):" % path)
        for line in program_text.rstrip().split("\n"):
            print("        " + line)
        sys.stdout.flush()

    def run_file(self, programs):
        """programs: [(label, [FnDef...], rng_for_args)]: one .tri, five compiles."""
        self.file_count += 1
        text = "".join("# %s\n%s\n" % (label, render_program(fns)) for label, fns, _ in programs)
        src = os.path.join(self.work, "f%d.tri" % self.file_count)
        with open(src, "w") as f:
            f.write(text)
        check = self.tc("check", src)
        if check.returncode != 0:
            for label, fns, _ in programs:
                self.failed += 1
            self.fail("%s: `tritonc check` rejected a generated file (a bug of this generator)"
                      % ",".join(p[0] for p in programs),
                      text, ["exit %d" % check.returncode] + check.stderr.rstrip().split("\n"))
            return
        modules = {}
        compile_errors = {}
        for level in LEVELS:
            out = os.path.join(self.work, "f%d_%s.py" % (self.file_count, level[1:]))
            proc = self.tc("compile", src, level, "-o", out)
            if proc.returncode != 0:
                compile_errors[level] = "tritonc compile %s: exit %d\n%s" % (
                    level, proc.returncode, proc.stderr)
                continue
            try:
                modules[level] = (load_module(out, "%d_%s" % (self.file_count, level[1:])), out)
            except Exception:  # noqa: BLE001
                compile_errors[level] = "import of the %s module failed:\n%s" % (
                    level, traceback.format_exc())
        self.file_text = text
        for label, fns, arg_rng in programs:
            self.run_program(label, fns, arg_rng, modules, compile_errors)

    def reduce(self, label, fns, args):
        first = self.try_program(fns, args)
        if first is None or not first[0]:
            print("    (not reduced: the failure did not repeat)")
            return
        small, (levels, detail) = reduce_program(self, fns, args, first[0])
        path = self.save(render_program(small))
        print("    reduced (levels %s, saved as %s):" % (" ".join(levels), path))
        for level in levels:
            expected, got = detail[level]
            print("      %s: %s(%s): expected %s, got %s" % (
                level, small[-1].name, ", ".join(show(a) for a in args), show(expected),
                got if isinstance(got, str) else show(got)))
        for line in render_program(small).rstrip().split("\n"):
            print("        " + line)
        sys.stdout.flush()

    def try_program(self, fns, args):
        """For the reducer: (failing levels, {level: (expected, got)}) of `fns` on `args`,
        or None when the program is invalid or its reference fails."""
        text = render_program(fns)
        self.file_count += 1
        src = os.path.join(self.work, "r%d.tri" % self.file_count)
        with open(src, "w") as f:
            f.write(text)
        if self.tc("check", src).returncode != 0:
            return None
        entry = fns[-1]
        try:
            expected = Interp(self.torch, 200_000).call(
                entry, [a.clone() if hasattr(a, "clone") else a for a in args])
        except Exception:  # noqa: BLE001 - out of contract, or a removed counter step
            return None
        failing, detail = [], {}
        for level in LEVELS:
            out = os.path.join(self.work, "r%d_%s.py" % (self.file_count, level[1:]))
            if self.tc("compile", src, level, "-o", out).returncode != 0:
                failing.append(level)
                detail[level] = (expected, "compile failed")
                continue
            try:
                module = load_module(out, "r%d_%s" % (self.file_count, level[1:]))
                got = timed_call(getattr(module, entry.name),
                                 [a.clone() if hasattr(a, "clone") else a for a in args])
            except Exception as e:  # noqa: BLE001
                got = "raised %s: %s" % (type(e).__name__, e)
            if isinstance(got, str) or not same(expected, got, entry.ret,
                                                self.args.float_rtol, self.torch):
                failing.append(level)
                detail[level] = (expected, got)
        return tuple(failing), detail

    def run_program(self, label, fns, arg_rng, modules, compile_errors):
        entry = fns[-1]
        program_text = render_program(fns)
        problems = []
        if any(p[1] == TENSOR for p in entry.params) and self.torch is None:
            import torch
            self.torch = torch
        for level, err in compile_errors.items():
            problems.append("%s: %s" % (level, err.rstrip()))
        failing_levels = set(compile_errors)
        fail_args = None
        for _ in range(self.args.arg_sets):
            args = make_args(arg_rng, entry, self.torch)
            interp = Interp(self.torch)
            try:
                expected = interp.call(entry, [a.clone() if hasattr(a, "clone") else a
                                               for a in args])
            except OutOfContract:
                self.skipped_args += 1
                continue
            except Exception:  # noqa: BLE001 - a bug of this generator or interpreter
                problems.append("the reference interpreter failed on %s (a bug of this test):"
                                % (args,))
                problems += traceback.format_exc().rstrip().split("\n")
                break
            if entry.ret == TENSOR and not bool(self.torch.isfinite(expected).all()):
                self.skipped_args += 1
                continue
            self.compared += 1
            for level in LEVELS:
                if level in failing_levels or level not in modules:
                    continue
                module = modules[level][0]
                call_args = [a.clone() if hasattr(a, "clone") else a for a in args]
                try:
                    got = timed_call(getattr(module, entry.name), call_args)
                except Exception as e:  # noqa: BLE001
                    got = "raised %s: %s" % (type(e).__name__, e)
                    ok = False
                else:
                    ok = same(expected, got, entry.ret, self.args.float_rtol, self.torch)
                if ok and entry.ret == TENSOR:
                    for a, b in zip(args, call_args):
                        if hasattr(a, "clone") and not self.torch.equal(a, b):
                            ok = False
                            got = "an input tensor was modified in place: %s" % show(b)
                if not ok:
                    if fail_args is None:
                        fail_args = args
                    failing_levels.add(level)
                    problems.append("%s: %s(%s): expected %s, got %s" % (
                        level, entry.name, ", ".join(show(a) for a in args), show(expected),
                        got if isinstance(got, str) else show(got)))
        if problems:
            self.failed += 1
            self.fail("%s (levels %s)" % (label, " ".join(sorted(failing_levels))),
                      program_text, problems, [m[1] for m in modules.values()], self.file_text)
            if self.args.reduce and fail_args is not None:
                self.reduce(label, fns, fail_args)
        else:
            self.passed += 1
            if self.args.verbose:
                print("PASS", label)

    def main(self):
        rng = random.Random(self.args.seed)
        features = set(FEATURES) - set(x for x in self.args.exclude.split(",") if x)
        gen = Gen(rng, features)
        batch = []
        for i in range(self.args.programs):
            label = "seed%d_p%d" % (self.args.seed, i)
            fns = gen.program("p%d" % i)
            batch.append((label, fns, random.Random(rng.random())))
            if len(batch) == self.args.per_file or i == self.args.programs - 1:
                if self.args.only:
                    batch = [b for b in batch if int(b[0].rsplit("_p", 1)[1]) in self.args.only]
                if batch:
                    self.run_file(batch)
                batch = []
                gen.new_file()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tritonc", default=os.path.join(REPO, "build/tools/tritonc/tritonc"))
    parser.add_argument("--programs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-file", type=int, default=5, help="programs per .tri file")
    parser.add_argument("--arg-sets", type=int, default=4, help="argument sets per program")
    parser.add_argument("--float-rtol", type=float, default=1e-9)
    parser.add_argument("--exclude", default="",
                        help="features to leave out, comma-separated: " + ",".join(FEATURES))
    parser.add_argument("--only", type=lambda v: set(int(x) for x in v.split(",")),
                        default=None, help="run only these program numbers (e.g. 30,132: "
                        "the N of a FAIL seedS_pN line, with the same --seed and options)")
    parser.add_argument("--reduce", action="store_true",
                        help="shrink each failing program (slow) and print the result")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    start = time.time()
    with tempfile.TemporaryDirectory() as work:
        run = Run(args, work)
        run.main()
    print("seed %d: %d programs, %d argument sets compared at %d levels, %d skipped "
          "(reference left int32/finite floats), %.1fs"
          % (args.seed, args.programs, run.compared, len(LEVELS), run.skipped_args,
             time.time() - start))
    print("%d passed, %d failed" % (run.passed, run.failed))
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
