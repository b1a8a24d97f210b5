#!/usr/bin/env python3
"""The compile cache of `tritonc`, tested as a user would use it (TOOLCHAIN.md "Cache").

    /usr/bin/python3 tests/cache/test_cache.py [--tritonc build/tools/tritonc/tritonc] [-k FILTER]

Every test runs in its own temporary directory with its own TRITONC_CACHE_DIR,
TRITONC_CONFIG and HOME (TRITONC_NO_CACHE, XDG_CACHE_HOME and TRITONC_NVCC removed
from the environment), so the tests are independent of each other and of the
user's cache. Each test compares outputs byte for byte with a `--no-cache` compile
of the same file and flags, and checks exit codes, stderr and the counters of
`tritonc cache stats --json`:

- a second compile is an L3 hit; a changed -O level an L2 hit (-O0 has its own IR);
- identical source at another path and name hits, and the outputs name the new file;
- every output-affecting flag is in the key, reporting flags are not; the compiler
  binary is in the key;
- corrupt, truncated, foreign and misplaced entries are detected, counted, removed and
  recompiled; `cache validate` finds planted ones and stale temporary files;
- 8 concurrent processes share one cache with no failure, corruption or lost counter;
- processes killed with SIGKILL during large writes leave nothing a later run trusts;
- an unusable cache directory (cannot be created, read-only, a level that cannot be
  written, a full disk) gives one [CacheUnavailable] warning and a normal compile;
- `cache prune` (age, size, configured TTL), automatic eviction at the configured
  limits, `cache clear [--level]`;
- warnings are replayed on hits (also under -Werror and -q); files with errors are
  never cached;
- --no-cache, TRITONC_NO_CACHE, cache.enabled, and the debugging flags bypass the cache;
- `config get|set`, the cache directory precedence, broken configuration files;
- the CUDA target with a fake nvcc: the .so comes from the cache on a hit;
- an identical existing output is not rewritten on a hit, a different one is replaced.

Some sub-cases need privileges: a read-only directory is tested as user `nobody` when
the suite runs as root (skipped, with a note, when that is not possible), a full disk
with a small tmpfs (root only; skipped with a note elsewhere).
Ends with "N passed, N failed"; exits 1 if any test failed.
"""
import argparse
import json
import os
import pwd
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")
MISSING_NVCC = "/nonexistent/nvcc"
NOBODY = 65534

# A layer and a function with a warning ([ChainedComparison]): compiles with exit 0.
WARN_SOURCE = """\
# A warning that the cache must replay on every hit.
fn all_equal(a: bool, b: bool, c: bool) -> bool {
    return a == b == c
}
layer Net(w: TernaryTensor<trit, [4, 2]>, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 2]> {
    return x @ w
}
"""

# A type error: exit 1, never cached.
ERROR_SOURCE = """\
fn inside(lo: int, x: int, hi: int) -> bool {
    return lo <= x < hi
}
layer Net(w: TernaryTensor<trit, [4, 2]>, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 2]> {
    return x @ w
}
"""


def example(name):
    return os.path.join(EXAMPLES, name + ".tri")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def check_eq(actual, expected, what):
    if actual != expected:
        raise AssertionError("%s: expected %r, got %r" % (what, expected, actual))


def same_bytes(actual, expected, what):
    if actual != expected:
        raise AssertionError("%s: %d bytes differ from the expected %d bytes (first difference "
                             "at %s)" % (what, len(actual), len(expected),
                                         first_difference(actual, expected)))


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "byte %d" % i
    return "byte %d (one is a prefix of the other)" % min(len(a), len(b))


def write_big_model(path, layers, seed):
    """A model with `layers` layers of random names and sizes: a compile takes tens of ms and
    writes a large (1 MB and more), badly compressible L2 entry."""
    rng = random.Random(seed)
    parts = []
    for i in range(layers):
        name = "B%d%s" % (i, "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10)))
        d = rng.randint(8, 64)
        parts.append(
            "layer %s(w: TernaryTensor<trit, [%d, %d]>, b: Tensor<float32, [%d]>, "
            "x: Tensor<float32, [?, %d]>) -> Tensor<float32, [?, %d]> {\n"
            "    return relu(x @ w + b) * %d.%d + x\n}\n" % (name, d, d, d, d, d, rng.randint(0, 9),
                                                           rng.randint(0, 999)))
    parts.append("layer Big(w: TernaryTensor<trit, [32, 32]>, x: Tensor<float32, [?, 32]>) "
                 "-> Tensor<float32, [?, 32]> {\n    return x @ w\n}\n")
    write(path, "\n".join(parts))
    return path


class Ctx:
    """One test's world: a temporary directory, its cache, config and home."""

    def __init__(self, tritonc, root):
        self.tritonc = tritonc
        self.root = root
        self.cache = os.path.join(root, "cache")
        self.config = os.path.join(root, "config.yaml")
        self.home = os.path.join(root, "home")
        os.makedirs(self.home)
        env = dict(os.environ)
        for key in ("TRITONC_NO_CACHE", "TRITONC_CACHE_DIR", "TRITONC_CONFIG", "XDG_CACHE_HOME",
                    "TRITONC_NVCC", "NO_COLOR", "NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS",
                    "NVCC_CCBIN"):
            env.pop(key, None)
        env.update(TRITONC_CACHE_DIR=self.cache, TRITONC_CONFIG=self.config, HOME=self.home,
                   LC_ALL="C")
        self.env = env
        self.count = 0
        self.refs = {}
        self.notes = []

    def note(self, text):
        self.notes.append(text)

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def environ(self, env=None, unset=()):
        e = dict(self.env)
        for key in unset:
            e.pop(key, None)
        if env:
            e.update(env)
        return e

    def run(self, *args, rc=0, env=None, unset=(), cwd=None, preexec_fn=None, timeout=300):
        argv = [self.tritonc] + [str(a) for a in args]
        proc = subprocess.run(argv, capture_output=True, text=True, env=self.environ(env, unset),
                              cwd=cwd or self.root, timeout=timeout, preexec_fn=preexec_fn)
        if rc is not None and proc.returncode != rc:
            raise AssertionError("%s: exit %d, expected %d\nstdout: %s\nstderr: %s"
                                 % (" ".join(argv[1:]), proc.returncode, rc, proc.stdout,
                                    proc.stderr))
        return proc

    def fresh_dir(self, prefix="out"):
        self.count += 1
        d = self.path("%s%d" % (prefix, self.count))
        os.makedirs(d)
        return d

    def out_for(self, src):
        return os.path.join(self.fresh_dir(), stem(src) + ".py")

    def compile(self, src, *flags, out=None, rc=0, env=None, unset=(), cwd=None, timeout=300):
        """Compiles `src` into `out` (a fresh directory when None); returns (proc, out)."""
        out = out or self.out_for(src)
        proc = self.run("compile", src, "-o", out, *flags, rc=rc, env=env, unset=unset, cwd=cwd,
                        timeout=timeout)
        return proc, out

    def reference(self, src, *flags, env=None):
        """The outputs of a --no-cache compile of `src` with `flags` (memoized)."""
        key = (src, flags, tuple(sorted((env or {}).items())))
        if key not in self.refs:
            proc, out = self.compile(src, "--no-cache", *flags, env=env)
            self.refs[key] = outputs(out)
        return self.refs[key]

    def stats(self, env=None, unset=()):
        return json.loads(self.run("cache", "stats", "--json", env=env, unset=unset).stdout)

    def levels(self):
        return self.stats()["levels"]

    def entries(self, level, cache=None):
        """The entry files of a level (temporary files excluded), sorted."""
        root = os.path.join(cache or self.cache, level)
        found = []
        if os.path.isdir(root):
            for folder in sorted(os.listdir(root)):
                d = os.path.join(root, folder)
                if not os.path.isdir(d):
                    continue
                for name in sorted(os.listdir(d)):
                    if ".tmp." not in name:
                        found.append(os.path.join(d, name))
        return found

    def temporaries(self, cache=None):
        found = []
        for level in ("l2", "l3"):
            root = os.path.join(cache or self.cache, level)
            for d, _, files in os.walk(root):
                found += [os.path.join(d, f) for f in files if ".tmp." in f]
        return sorted(found)

    def validate(self):
        """Runs `cache validate`; returns (checked, valid, corrupt, corrupt lines)."""
        proc = self.run("cache", "validate")
        self.validate_stdout = proc.stdout
        m = re.search(r"^checked (\d+) entr(?:y|ies): (\d+) valid, (\d+) corrupt \(removed\)$",
                      proc.stdout, re.M)
        check(m is not None, "cache validate printed no summary: %r" % proc.stdout)
        lines = [l for l in proc.stdout.splitlines() if l.startswith("corrupt: ")]
        checked, valid, corrupt = (int(g) for g in m.groups())
        check_eq(len(lines), corrupt, "number of 'corrupt:' lines of cache validate")
        return checked, valid, corrupt, lines

    def fake_nvcc(self, name="nvcc", mode="copy", size=0):
        """An executable that records each run in `<name>.runs` and writes the library:
        mode copy: deterministic bytes (a header + the .cu); random: `size` random bytes;
        fail: exit 1."""
        path = self.path("bin", name)
        runs = path + ".runs"
        body = {
            "copy": "{ printf '\\177ELF fake tritonc kernels\\n'; cat \"$cu\"; } > \"$out\"",
            "random": "head -c %d /dev/urandom > \"$out\"" % size,
            "fail": "echo 'fake nvcc: error: no' >&2; exit 1",
        }[mode]
        write(path, "#!/bin/sh\n"
                    "# a fake nvcc for tests/cache/test_cache.py\n"
                    "echo \"$*\" >> '%s'\n"
                    "out=; cu=; prev=\n"
                    "for a in \"$@\"; do\n"
                    "  if [ \"$prev\" = \"-o\" ]; then out=$a; fi\n"
                    "  prev=$a; cu=$a\n"
                    "done\n"
                    "[ -n \"$out\" ] || exit 2\n"
                    "%s\n" % (runs, body))
        os.chmod(path, 0o755)
        return path, runs


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def outputs(py):
    """{py, cu, so} bytes of a compile's outputs (None where absent)."""
    d = os.path.dirname(py)
    result = {"py": read(py) if os.path.exists(py) else None}
    # the CUDA files are named after the input; find them next to the module
    cu = [f for f in os.listdir(d) if f.endswith("_kernels.cu")] if os.path.isdir(d) else []
    so = [f for f in os.listdir(d) if f.endswith("_kernels.so")] if os.path.isdir(d) else []
    result["cu"] = read(os.path.join(d, cu[0])) if len(cu) == 1 else None
    result["so"] = read(os.path.join(d, so[0])) if len(so) == 1 else None
    return result


def same_outputs(actual, expected, what):
    for kind in ("py", "cu", "so"):
        if expected[kind] is None:
            check(actual[kind] is None, "%s: unexpected %s output" % (what, kind))
        else:
            check(actual[kind] is not None, "%s: no %s output" % (what, kind))
            same_bytes(actual[kind], expected[kind], "%s (%s)" % (what, kind))


def runs(path):
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return len(f.read().splitlines())


class Delta:
    """Counter changes of one command: Delta(ctx) before, .of('l3', 'hits') after."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.before = ctx.levels()
        self.after = None

    def done(self):
        self.after = self.ctx.levels()
        return self

    def of(self, level, field):
        if self.after is None:
            self.done()
        return self.after[level][field] - self.before[level][field]


def compile_counted(ctx, src, *flags, **kw):
    """Compiles and returns (proc, out, delta)."""
    delta = Delta(ctx)
    proc, out = ctx.compile(src, *flags, **kw)
    return proc, out, delta.done()


def expect_l3(delta, hit, what):
    check_eq((delta.of("l3", "hits"), delta.of("l3", "misses")), (1, 0) if hit else (0, 1),
             "%s: (L3 hits, L3 misses) of the compile" % what)


def expect_cuda(delta, code, library, what):
    """A CUDA compile with nvcc looks up two L3 entries: the generated code, then the
    library built from its .cu (an entry of its own, keyed by the .cu's content)."""
    hits = int(code) + int(library)
    check_eq((delta.of("l3", "hits"), delta.of("l3", "misses")), (hits, 2 - hits),
             "%s: (L3 hits, L3 misses) of the compile (code %s, library %s)"
             % (what, "hit" if code else "miss", "hit" if library else "miss"))


class Soft:
    """Collects sub-case failures so that every sub-case of a test runs."""

    def __init__(self):
        self.failures = []

    def __call__(self, name, fn, *args):
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001
            self.failures.append("%s: %s" % (name, e))

    def done(self):
        if self.failures:
            raise AssertionError("%d sub-case(s) failed:\n  - %s"
                                 % (len(self.failures), "\n  - ".join(self.failures)))


# ---- 1. hits -------------------------------------------------------------------------------------


def test_second_compile_is_l3_hit(ctx):
    src = example("resnet50")
    ref = ctx.reference(src, "-O2")
    proc1, out1 = ctx.compile(src, "-O2", "--verbose")
    check("L3 miss" in proc1.stderr and "L2 miss" in proc1.stderr,
          "first compile does not say it missed L3 and L2: %r" % proc1.stderr)
    same_outputs(outputs(out1), ref, "first compile")
    s = ctx.stats()
    l2, l3 = s["levels"]["l2"], s["levels"]["l3"]
    check_eq((l3["hits"], l3["misses"], l3["stores"], l3["entries"]), (0, 1, 1, 1),
             "L3 (hits, misses, stores, entries) after one compile")
    check_eq((l2["hits"], l2["misses"], l2["stores"], l2["entries"]), (0, 1, 1, 1),
             "L2 (hits, misses, stores, entries) after one compile")
    check_eq(len(ctx.entries("l3")), 1, "L3 entry files")
    check(re.fullmatch(r"[0-9a-f]{30}", os.path.basename(ctx.entries("l3")[0])) is not None
          and re.fullmatch(r"[0-9a-f]{2}", os.path.basename(os.path.dirname(ctx.entries("l3")[0])))
          is not None, "entry path is not l3/ab/<30 hex>: %s" % ctx.entries("l3"))

    proc2, out2 = ctx.compile(src, "-O2", "--verbose")
    check("L3 hit" in proc2.stderr, "second compile is not an L3 hit: %r" % proc2.stderr)
    check("optimization pipeline" not in proc2.stderr and "L2" not in proc2.stderr,
          "the pipeline ran on an L3 hit: %r" % proc2.stderr)
    same_bytes(read(out2), read(out1), "output of the hit vs output of the miss")
    same_outputs(outputs(out2), ref, "hit")
    s = ctx.stats()
    l2, l3, total = s["levels"]["l2"], s["levels"]["l3"], s["total"]
    check_eq((l3["hits"], l3["misses"], l3["stores"], l3["entries"]), (1, 1, 1, 1),
             "L3 (hits, misses, stores, entries) after the hit")
    check_eq((l2["hits"], l2["misses"]), (0, 1), "L2 (hits, misses): no L2 lookup on an L3 hit")
    check_eq(l3["hit_rate"], 0.5, "L3 hit rate")
    check(l3["time_saved_s"] > 0, "no time saved recorded for the hit: %r" % l3)
    check_eq(total["hits"], l2["hits"] + l3["hits"] + s["levels"]["l1"]["hits"], "total hits")
    check_eq(total["entries"], l2["entries"] + l3["entries"], "total entries")
    check_eq(total["size_bytes"], sum(os.path.getsize(p) for p in
                                      ctx.entries("l2") + ctx.entries("l3")), "total size_bytes")
    for key in ("cache_dir", "enabled", "disabled_by", "config_file", "config_file_exists",
                "levels", "total"):
        check(key in s, "stats --json has no %r" % key)
    check_eq(s["cache_dir"], ctx.cache, "stats cache_dir")
    check_eq((s["enabled"], s["disabled_by"]), (True, None), "stats enabled, disabled_by")
    check_eq(s["config_file"], ctx.config, "stats config_file")
    for level in ("l1", "l2", "l3"):
        for field in ("entries", "size_bytes", "limit_bytes", "hits", "misses", "hit_rate",
                      "stores", "corrupt", "evicted", "time_saved_s"):
            check(field in s["levels"][level], "stats --json: %s has no %r" % (level, field))

    # the text report
    text = ctx.run("cache", "stats").stdout
    rows = {line.split()[0].lower(): line for line in text.splitlines() if line.split()
            and line.split()[0].lower() in ("l1", "l2", "l3", "total")}
    check_eq(sorted(rows), ["l1", "l2", "l3", "total"], "rows of cache stats")
    check("50.0%" in rows["l3"], "cache stats: L3 row has no 50.0%% hit rate: %r" % rows["l3"])
    check(ctx.cache in text, "cache stats does not name the cache directory")

    # --timing reports the cache
    proc3, _ = ctx.compile(src, "-O2", "--timing")
    check("l3 1 hit(s), 0 miss(es)" in proc3.stderr,
          "--timing does not report the L3 hit: %r" % proc3.stderr[-600:])


def test_source_change_misses(ctx):
    src = ctx.path("src", "model.tri")
    original = read(example("mnist_mlp"))
    edits = [
        ("a comment added", original + b"# a comment\n"),
        ("a weight size changed", original.replace(b"[784, 256]", b"[784, 300]")
         .replace(b"[256]", b"[300]").replace(b"[256, 128]", b"[300, 128]")),
        ("CRLF line ends", original.replace(b"\n", b"\r\n")),
        ("the original again", original),
    ]
    write(src, original)
    ref0 = ctx.reference(src)
    _, out, d = compile_counted(ctx, src)
    expect_l3(d, False, "first compile")
    for what, text in edits:
        again = text == original
        write(src, text)
        ctx.refs.clear()  # references are of the file's current contents
        ref = ref0 if again else ctx.reference(src)
        if what == "a weight size changed":
            check(ref["py"] != ref0["py"], "the edit does not change the generated code")
        _, out, d = compile_counted(ctx, src)
        expect_l3(d, again, what)
        if not again:
            check_eq((d.of("l2", "hits"), d.of("l2", "misses")), (0, 1), what + ": L2")
        same_outputs(outputs(out), ref, what)


def test_damaged_stats_file(ctx):
    src = example("mnist_mlp")
    ref = ctx.reference(src)
    ctx.compile(src)
    stats = os.path.join(ctx.cache, "stats")
    check(os.path.isfile(stats), "no stats file in the cache directory")
    soft = Soft()
    for what, damage in (("garbage", lambda: write(stats, os.urandom(300))),
                         ("torn", lambda: write(stats, read(stats)[:len(read(stats)) // 2])),
                         ("empty", lambda: write(stats, b""))):
        def one(what=what, damage=damage):
            damage()
            s = ctx.stats()
            check_eq(s["levels"]["l3"]["entries"], 1, what + ": entries (scanned) in stats")
            _, out, d = compile_counted(ctx, src)
            expect_l3(d, True, what)
            same_outputs(outputs(out), ref, what)
        soft(what, one)

    def directory():
        os.unlink(stats)
        os.makedirs(stats)
        proc, out = ctx.compile(src)
        same_outputs(outputs(out), ref, "stats is a directory")
        check_eq(ctx.run("cache", "stats", "--json").returncode, 0, "stats exit status")
        os.rmdir(stats)
    soft("a directory", directory)
    soft.done()
    # stats and validate of a directory that does not exist: zeros, nothing created
    missing = ctx.path("no-such-cache")
    s = json.loads(ctx.run("cache", "stats", "--json", "--cache-dir", missing).stdout)
    check_eq((s["total"]["entries"], s["total"]["hits"]), (0, 0), "stats of a missing directory")
    proc = ctx.run("cache", "validate", "--cache-dir", missing)
    check("checked 0 entries" in proc.stdout, "validate of a missing directory: %r" % proc.stdout)
    check(not os.path.exists(missing), "stats or validate created the cache directory")


def test_opt_level_change_is_l2_hit(ctx):
    src = example("resnet18")
    _, out, d = compile_counted(ctx, src, "-O1")
    expect_l3(d, False, "-O1")
    same_outputs(outputs(out), ctx.reference(src, "-O1"), "-O1")
    # One checked IR serves every level: it carries -O0's run-time shape checks, which the
    # other levels strip (so -O0 after -O1 is an L2 hit too, and -O0 first serves -O2).
    for level, l2_hit in (("-O2", True), ("-O3", True), ("-Os", True), ("-O0", True)):
        proc, out, d = compile_counted(ctx, src, level, "--verbose")
        expect_l3(d, False, level)
        check_eq((d.of("l2", "hits"), d.of("l2", "misses")), (1, 0) if l2_hit else (0, 1),
                 "%s after -O1: (L2 hits, L2 misses)" % level)
        check(("L2 hit" in proc.stderr) == l2_hit, "%s: --verbose says %r" % (level, proc.stderr))
        same_outputs(outputs(out), ctx.reference(src, level), level + " (after -O1)")
    _, out, d = compile_counted(ctx, src, "-O0")
    expect_l3(d, True, "-O0 again")
    same_outputs(outputs(out), ctx.reference(src, "-O0"), "-O0 again")
    # The other way round: -O0 first (its IR, with the checks), then -O2 and -O1 from it.
    ctx.run("cache", "clear")
    _, out, d = compile_counted(ctx, src, "-O0")
    check_eq((d.of("l2", "misses"), d.of("l2", "stores")), (1, 1), "-O0 first: L2 (misses, stores)")
    check(b"shape mismatch" in read(out), "the -O0 module has no run-time shape checks")
    for level in ("-O2", "-O1"):
        _, out, d = compile_counted(ctx, src, level)
        check_eq((d.of("l2", "hits"), d.of("l2", "misses")), (1, 0), level + " after -O0: L2")
        same_outputs(outputs(out), ctx.reference(src, level), level + " from -O0's IR")
        check(b"shape mismatch" not in read(out), level + " kept -O0's run-time shape checks")
    check(ctx.reference(src, "-O2")["py"] != ctx.reference(src, "-O1")["py"],
          "-O1 and -O2 give the same output: the L2 check proves nothing")


def test_big_file_keeps_its_groups_checked_ir_in_l2(ctx):
    """A big file of many models compiled in parallel groups (-j 2) keeps each group's checked
    IR in L2: another -O is an L2 hit finished in groups (serially with -j 1), byte-identical to
    a --no-cache -j 1 compile. A compile that needs the whole file's IR (-Os merges identical
    declarations across the file) counts that entry as a miss, and the whole file's IR it stores
    serves later compiles."""
    src = write_big_model(os.path.join(ctx.root, "many.tri"), 160, 11)
    check(os.path.getsize(src) >= 16 * 1024, "the model is too small to be split")

    def serial(level):
        return ctx.reference(src, level, "-j", "1")

    proc, out, d = compile_counted(ctx, src, "-O1", "-j", "2", "--verbose")
    check("parallel groups" in proc.stderr, "-O1 -j 2 was not compiled in groups: %r"
          % proc.stderr[-600:])
    check_eq((d.of("l2", "misses"), d.of("l2", "stores")), (1, 1), "-O1: L2 (misses, stores)")
    same_outputs(outputs(out), serial("-O1"), "-O1 in groups")
    for level, jobs in (("-O2", "2"), ("-O3", "1")):
        proc, out, d = compile_counted(ctx, src, level, "-j", jobs, "--verbose")
        expect_l3(d, False, level)
        check_eq((d.of("l2", "hits"), d.of("l2", "misses"), d.of("l2", "stores")), (1, 0, 0),
                 "%s -j %s after -O1: L2 (hits, misses, stores)" % (level, jobs))
        check("compiled from L2 in" in proc.stderr,
              "%s -j %s was not finished from the groups' IR: %r" % (level, jobs,
                                                                     proc.stderr[-600:]))
        same_outputs(outputs(out), serial(level), "%s -j %s from L2" % (level, jobs))
    proc, out, d = compile_counted(ctx, src, "-Os", "-j", "2", "--verbose")
    check_eq((d.of("l2", "hits"), d.of("l2", "misses"), d.of("l2", "stores")), (0, 1, 1),
             "-Os after grouped compiles: L2 (hits, misses, stores)")
    same_outputs(outputs(out), serial("-Os"), "-Os")
    shutil.rmtree(os.path.join(ctx.cache, "l3"))
    proc, out, d = compile_counted(ctx, src, "-O2", "-j", "2", "--verbose")
    check_eq((d.of("l2", "hits"), d.of("l2", "misses")), (1, 0),
             "-O2 after -Os stored the whole file's IR: L2 (hits, misses)")
    check("compiled from L2 in" not in proc.stderr, "-O2 used groups the -Os compile replaced")
    same_outputs(outputs(out), serial("-O2"), "-O2 from the whole file's IR")
    check(serial("-O2")["py"] != serial("-O1")["py"],
          "-O1 and -O2 give the same output: the L2 checks prove nothing")


def test_identical_source_elsewhere_hits(ctx):
    original = ctx.path("a", "mnist_mlp.tri")
    write(original, read(example("mnist_mlp")))
    copy = ctx.path("b", "deeper", "other_name.tri")
    write(copy, read(example("mnist_mlp")))
    _, out1, d = compile_counted(ctx, original, "-O2")
    expect_l3(d, False, "original")
    _, out2, d = compile_counted(ctx, copy, "-O2")
    expect_l3(d, True, "copy at another path and name")
    ref = ctx.reference(copy, "-O2")
    same_outputs(outputs(out2), ref, "copy")
    text = read(out2).decode()
    check("other_name.tri" in text and "mnist_mlp" not in text,
          "the module compiled from the copy does not name it: %r" % text[:300])
    # relative path from another working directory
    _, out3, d = compile_counted(ctx, os.path.join("deeper", "other_name.tri"), "-O2",
                                 cwd=ctx.path("b"))
    expect_l3(d, True, "copy by a relative path")
    same_bytes(read(out3), ref["py"], "copy by a relative path")

    # the CUDA target: the module names <new stem>_kernels.so, the .cu the new file
    _, out4, d = compile_counted(ctx, original, "--target", "cuda", "--nvcc", MISSING_NVCC)
    expect_l3(d, False, "original, --target cuda")
    _, out5, d = compile_counted(ctx, copy, "--target", "cuda", "--nvcc", MISSING_NVCC)
    expect_l3(d, True, "copy, --target cuda")
    got = outputs(out5)
    same_outputs(got, ctx.reference(copy, "--target", "cuda", "--nvcc", MISSING_NVCC),
                 "copy, --target cuda")
    check(os.path.exists(os.path.join(os.path.dirname(out5), "other_name_kernels.cu")),
          "no other_name_kernels.cu next to the module")
    check(b"other_name_kernels.so" in got["py"] and b"mnist_mlp" not in got["py"],
          "the module does not load other_name_kernels.so")
    check(b"other_name.tri" in got["cu"] and b"mnist_mlp.tri" not in got["cu"],
          "the .cu does not name other_name.tri")

    # -O0's run-time shape checks quote the input's name: a copy elsewhere is
    # its own L3 entry, whose messages name the copy (never the original); the
    # checked IR names the file by a placeholder, so its L2 entry is shared
    checks = ("layer Head(n: int, w: Tensor<float32, [n, 10]>, x: Tensor<float32, [?, ?]>)\n"
              "    -> Tensor<float32, [?, 10]> {\n"
              "    let y: Tensor<float32, [?, n]> = x\n"
              "    return y @ w\n"
              "}\n")
    first, second = ctx.path("a", "checks.tri"), ctx.path("b", "renamed.tri")
    write(first, checks)
    write(second, checks)
    _, out6, d = compile_counted(ctx, first, "-O0")
    expect_l3(d, False, "-O0 original")
    _, out7, d = compile_counted(ctx, second, "-O0")
    expect_l3(d, False, "-O0 copy at another path")
    check_eq((d.of("l2", "hits"), d.of("l2", "misses")), (1, 0), "-O0 copy: L2 (hits, misses)")
    check(first.encode() not in read(out7) and second.encode() in read(out7),
          "the -O0 module of the copy does not quote its own name in its checks")
    same_bytes(read(out7), ctx.reference(second, "-O0")["py"], "-O0 copy")
    _, out8, d = compile_counted(ctx, second, "-O0")
    expect_l3(d, True, "-O0 copy compiled again")


# ---- 4. keys -------------------------------------------------------------------------------------


def test_key_covers_output_flags_only(ctx):
    src = example("resnet18")
    cuda = ("--target", "cuda", "--nvcc", MISSING_NVCC)
    _, out, d = compile_counted(ctx, src)
    expect_l3(d, False, "default flags")
    # (flags, is an L3 hit after everything before it in the list)
    cases = [
        ((), True),
        (("-O1",), True),  # the default level spelled out
        (("-q",), True),
        (("--color=always",), True),
        (("--color=never",), True),
        (("--timing",), True),
        (("--verbose",), True),
        (("--diagnostics-format=json",), True),
        (("-Werror",), True),
        (("-j", "2"), True),
        (("--error-limit", "5"), True),
        (("--low-memory",), True),
        (("--time-trace=" + ctx.path("trace.json"),), True),
        (("--cuda-dtypes", "f32"), True),  # not used by the pytorch target
        (("--cache-dir", ctx.cache), True),
        (("-O2",), False),
        (("-O0",), False),
        (("-O3",), False),
        (("-Os",), False),
        (("--entry", "BasicBlock"), False),
        (("--entry", "ResNet18"), False),  # named explicitly: the header says so
        (("--target", "pytorch"), True),
        (cuda, False),
        (("--target", "all", "--nvcc", MISSING_NVCC), True),  # the same outputs as cuda
        (cuda + ("--cuda-dtypes", "f32"), False),
        (cuda + ("--cuda-dtypes", "f32,f16"), False),
        (cuda + ("--cuda-arch", "80"), False),
        (cuda + ("--cuda-arch", "86,90"), False),
        (cuda + ("-O2",), False),
        (cuda + ("-O2", "--entry", "BasicBlock"), False),
    ]
    soft = Soft()
    for flags, hit in cases:
        what = " ".join(flags) or "(default again)"

        def one(flags=flags, hit=hit, what=what):
            _, out, d = compile_counted(ctx, src, *flags)
            expect_l3(d, hit, what)
            same_outputs(outputs(out), ctx.reference(src, *flags), what)
            if not hit:
                _, out, d = compile_counted(ctx, src, *flags)
                expect_l3(d, True, what + " (second time)")
                same_outputs(outputs(out), ctx.reference(src, *flags), what + " (second time)")
        soft(what, one)
    soft.done()


def test_compiler_binary_is_in_key(ctx):
    src = example("mnist_mlp")
    _, out, d = compile_counted(ctx, src)
    expect_l3(d, False, "first compile")
    other = ctx.path("bin", "tritonc-copy")
    os.makedirs(os.path.dirname(other))
    shutil.copy(ctx.tritonc, other)  # a new file: another size/mtime identity
    before = Delta(ctx)
    proc = subprocess.run([other, "compile", src, "-o", ctx.out_for(src)], capture_output=True,
                          text=True, env=ctx.env, cwd=ctx.root)
    check_eq(proc.returncode, 0, "exit status of the copied compiler")
    expect_l3(before.done(), False, "another compiler binary")
    check_eq(before.of("l2", "misses"), 1, "L2 misses with another compiler binary")


# ---- 5, 6. corruption ----------------------------------------------------------------------------


def flip(path, offset):
    data = bytearray(read(path))
    offset = offset if offset >= 0 else len(data) + offset
    data[offset] ^= 0x5A
    write(path, bytes(data))


def test_corrupt_entries_are_recompiled(ctx):
    src = example("resnet50")
    other = example("mnist_mlp")
    ref = ctx.reference(src, "-O2")
    ctx.compile(other, "-O2")
    other_l3 = ctx.entries("l3")
    other_l2 = ctx.entries("l2")
    check_eq((len(other_l3), len(other_l2)), (1, 1), "entries of the other model")
    other_l3_path = other_l3[0]
    other_l3, other_l2 = read(other_l3[0]), read(other_l2[0])
    ctx.compile(src, "-O2")
    mine = [p for p in ctx.entries("l3") if read(p) != other_l3]
    check_eq(len(mine), 1, "L3 entries of the model")
    entry = mine[0]
    size = os.path.getsize(entry)
    check(size > 256, "the entry is unexpectedly small (%d bytes)" % size)

    def foreign_version(p):
        data = bytearray(read(p))
        data[8] = 2  # u16 format version
        write(p, bytes(data))

    corruptions = [
        ("one payload byte flipped", lambda p: flip(p, 64 + (size - 64) // 2)),
        ("last payload byte flipped", lambda p: flip(p, -1)),
        ("magic byte flipped", lambda p: flip(p, 0)),
        ("key byte in header flipped", lambda p: flip(p, 20)),
        ("size field in header flipped", lambda p: flip(p, 40)),
        ("compute-time field in header flipped", lambda p: flip(p, 50)),
        ("checksum byte flipped", lambda p: flip(p, 60)),
        ("level byte changed", lambda p: flip(p, 10)),
        ("foreign format version", foreign_version),
        ("truncated to half", lambda p: write(p, read(p)[:size // 2])),
        ("truncated inside the header", lambda p: write(p, read(p)[:30])),
        ("truncated by one byte", lambda p: write(p, read(p)[:-1])),
        ("empty", lambda p: write(p, b"")),
        ("a trailing byte", lambda p: write(p, read(p) + b"\0")),
        ("garbage", lambda p: write(p, bytes(random.Random(1).getrandbits(8)
                                             for _ in range(size)))),
        ("another key's entry", lambda p: write(p, other_l3)),
        ("an L2 entry", lambda p: write(p, other_l2)),
        # Not files at all (made by hand or another program): read without blocking or
        # following, then removed; the compile neither hangs nor fails (stop 39 audit).
        ("a FIFO", lambda p: (os.remove(p), os.mkfifo(p))),
        ("a link to /dev/zero", lambda p: (os.remove(p), os.symlink("/dev/zero", p))),
        ("a link to another entry", lambda p: (os.remove(p), os.symlink(other_l3_path, p))),
        ("a directory", lambda p: (os.remove(p), os.makedirs(os.path.join(p, "x")))),
    ]
    soft = Soft()
    for what, corrupt in corruptions:
        def one(what=what, corrupt=corrupt):
            check(os.path.exists(entry), "the entry is not there before corrupting it")
            corrupt(entry)
            proc, out, d = compile_counted(ctx, src, "-O2", timeout=60)
            same_outputs(outputs(out), ref, what)
            check_eq((d.of("l3", "corrupt"), d.of("l3", "hits"), d.of("l3", "misses")), (1, 0, 1),
                     "%s: L3 (corrupt, hits, misses)" % what)
            check_eq(d.of("l2", "hits"), 1, "%s: the L2 entry is used for the recompile" % what)
            check("internal" not in proc.stderr, "%s: %r" % (what, proc.stderr))
            _, _, corrupt_count, lines = ctx.validate()
            check_eq(corrupt_count, 0, "%s: corrupt entries found by validate after the recompile "
                     "(%s)" % (what, lines))
            _, out, d = compile_counted(ctx, src, "-O2")  # the rewritten entry is good
            expect_l3(d, True, what + ": the compile after the recompile")
            same_outputs(outputs(out), ref, what + ": hit after the recompile")
        soft(what, one)

    # L2: a corrupt checked-IR entry, seen by a compile at another -O level
    def l2_case():
        l2 = [p for p in ctx.entries("l2") if read(p) != other_l2]
        check_eq(len(l2), 1, "L2 entries of the model")
        flip(l2[0], -3)
        _, out, d = compile_counted(ctx, src, "-O3")
        same_outputs(outputs(out), ctx.reference(src, "-O3"), "corrupt L2, -O3")
        check_eq((d.of("l2", "corrupt"), d.of("l2", "hits"), d.of("l2", "misses")), (1, 0, 1),
                 "corrupt L2 entry: L2 (corrupt, hits, misses)")
        check_eq(ctx.validate()[2], 0, "corrupt entries after the L2 recompile")
    soft("L2 entry with a flipped byte", l2_case)
    soft.done()


def test_validate_removes_planted_corrupt_entries(ctx):
    models = ("mnist_mlp", "resnet18", "vgg16")
    owned = {}
    for name in models:
        before = set(ctx.entries("l2") + ctx.entries("l3"))
        ctx.compile(example(name))
        owned[name] = sorted(set(ctx.entries("l2") + ctx.entries("l3")) - before)
        check_eq(len(owned[name]), 2, "new entries of %s" % name)
    check_eq(ctx.validate(), (6, 6, 0, []), "validate of a clean cache")
    before = ctx.levels()

    l3 = {name: [p for p in owned[name] if "/l3/" in p][0] for name in models}
    l2 = {name: [p for p in owned[name] if "/l2/" in p][0] for name in models}
    flip(l3["mnist_mlp"], -1)                                    # checksum mismatch
    write(l2["resnet18"], read(l2["resnet18"])[:100])              # truncated payload
    garbage = os.path.join(ctx.cache, "l3", "00", "0" * 29 + "1")  # not an entry at all
    write(garbage, b"hello, not a cache entry\n" * 10)
    misplaced = os.path.join(ctx.cache, "l3", "ff", "f" * 30)      # valid, under another key
    write(misplaced, read(l3["vgg16"]))
    # an L2 entry in l3/, under its own key
    l2_in_l3 = os.path.join(ctx.cache, "l3", os.path.relpath(l2["vgg16"],
                                                             os.path.join(ctx.cache, "l2")))
    write(l2_in_l3, read(l2["vgg16"]))
    fresh_tmp = l3["resnet18"] + ".tmp.4242.0"    # a write in progress: not an entry, kept
    write(fresh_tmp, b"partial")
    stale_tmp = l3["vgg16"] + ".tmp.4243.1"       # left by a killed process long ago: removed
    write(stale_tmp, b"partial")
    old = time.time() - 7200
    os.utime(stale_tmp, (old, old))
    fifo = os.path.join(ctx.cache, "l3", "0f", "0" * 29 + "2")     # not files: removed
    os.makedirs(os.path.dirname(fifo), exist_ok=True)
    os.mkfifo(fifo)
    folder = os.path.join(ctx.cache, "l2", "0d", "0" * 29 + "3")
    os.makedirs(os.path.join(folder, "inside"))

    checked, valid, corrupt, lines = ctx.validate()
    planted = {
        os.path.relpath(fifo, ctx.cache): "not a regular file",
        os.path.relpath(folder, ctx.cache): "not a regular file",
        os.path.relpath(l3["mnist_mlp"], ctx.cache): "checksum",
        os.path.relpath(l2["resnet18"], ctx.cache): "truncated",
        os.path.relpath(garbage, ctx.cache): "magic",
        os.path.relpath(misplaced, ctx.cache): "another key",
        os.path.relpath(l2_in_l3, ctx.cache): "level",
    }
    check_eq((checked, valid, corrupt), (11, 4, 7), "validate (checked, valid, corrupt)")
    reported = {}
    for line in lines:
        m = re.fullmatch(r"corrupt: (\S+): (.*) \(removed\)", line)
        check(m is not None, "malformed validate line %r" % line)
        reported[m.group(1)] = m.group(2)
    check_eq(sorted(reported), sorted(planted), "entries validate reports as corrupt")
    for path, word in planted.items():
        check(word in reported[path], "validate says %r for %s (expected something about %r)"
              % (reported[path], path, word))
        check(not os.path.exists(os.path.join(ctx.cache, path)), "%s was not removed" % path)
    for path in (l3["resnet18"], l3["vgg16"], l2["mnist_mlp"], l2["vgg16"]):
        check(os.path.exists(path), "validate removed the valid entry %s" % path)
    check(os.path.exists(fresh_tmp),
          "validate removed a fresh temporary file (a write in progress)")
    check(not os.path.exists(stale_tmp), "validate kept a stale temporary file")
    # ...and says so, naming it, as it names each corrupt entry
    stale_lines = [l for l in ctx.validate_stdout.splitlines() if "temporary" in l]
    check_eq(stale_lines, ["stale temporary: %s (removed)" % os.path.relpath(stale_tmp, ctx.cache),
                           "removed 1 stale temporary file (7 B) left by interrupted writes"],
             "what validate says about temporary files")
    after = ctx.levels()
    check_eq((after["l3"]["corrupt"] - before["l3"]["corrupt"],
              after["l2"]["corrupt"] - before["l2"]["corrupt"]), (5, 2),
             "corrupt counters (l3, l2) after validate")
    check_eq((after["l2"]["entries"], after["l3"]["entries"]), (2, 2), "entries (l2, l3) after")
    check_eq(ctx.validate()[:3], (4, 4, 0), "second validate")
    # everything still compiles right; what was removed is compiled again
    for name in models:
        _, out, d = compile_counted(ctx, example(name))
        expect_l3(d, name != "mnist_mlp", name)
        same_outputs(outputs(out), ctx.reference(example(name)), name)


# ---- 7, 8. concurrency, kill -9 ------------------------------------------------------------------


def test_concurrent_processes_share_one_cache(ctx):
    big = write_big_model(ctx.path("src", "big.tri"), 3000, 11)
    jobs = [(example("mnist_mlp"), "-O1"), (example("mnist_mlp"), "-O1"),
            (example("resnet50"), "-O2"), (example("resnet50"), "-O2"),
            (example("resnet18"), "-O0"), (example("vgg16"), "-O2"),
            (example("resnet50"), "-O3"), (big, "-O1")]
    refs = {job: ctx.reference(*job) for job in set(jobs)}
    rounds = 3
    for r in range(rounds):
        procs = []
        for src, level in jobs:
            out = ctx.out_for(src)
            procs.append((src, level, out, subprocess.Popen(
                [ctx.tritonc, "compile", src, level, "-o", out], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=ctx.env, cwd=ctx.root)))
        if r == rounds - 1:  # maintenance commands running alongside the compiles
            procs.append((None, "validate", None, subprocess.Popen(
                [ctx.tritonc, "cache", "validate"], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=ctx.env, cwd=ctx.root)))
            procs.append((None, "stats", None, subprocess.Popen(
                [ctx.tritonc, "cache", "stats"], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=ctx.env, cwd=ctx.root)))
        for src, level, out, p in procs:
            stdout, stderr = p.communicate(timeout=300)
            what = "round %d: %s %s" % (r + 1, src and os.path.basename(src), level)
            check_eq(p.returncode, 0, what + ": exit status (stderr %r)" % stderr)
            if src is None:
                if level == "validate":
                    check(b" 0 corrupt" in stdout, what + ": %r" % stdout)
                continue
            check_eq(stderr, b"", what + ": stderr")
            same_outputs(outputs(out), refs[(src, level)], what)
    checked, valid, corrupt, lines = ctx.validate()
    check_eq(corrupt, 0, "corrupt entries after the concurrent compiles (%s)" % lines)
    check_eq(ctx.temporaries(), [], "temporary files left by the concurrent compiles")
    s = ctx.levels()
    l2, l3 = s["l2"], s["l3"]
    compiles = rounds * len(jobs)
    check_eq(l3["hits"] + l3["misses"], compiles, "L3 lookups counted (hits + misses)")
    check(l3["misses"] <= len(jobs), "L3 misses after round 1: %d" % l3["misses"])
    check_eq(l3["stores"], l3["misses"], "L3 stores (one per L3 miss)")
    check_eq(l2["hits"] + l2["misses"], l3["misses"], "L2 lookups (one per L3 miss)")
    check_eq(l2["stores"], l2["misses"], "L2 stores (one per L2 miss)")
    check_eq((l2["corrupt"], l3["corrupt"]), (0, 0), "corrupt counters")
    check_eq((l3["entries"], l2["entries"]), (len(set(jobs)), 5),
             "entries (l3: one per file and level, l2: one per file and -O0 or not)")
    check_eq(checked, l3["entries"] + l2["entries"], "entries validate checked")


def test_cache_removed_while_compiling(ctx):
    # `rm -rf ~/.cache/tritonc` by a CI cleanup step or another job while builds run: each
    # compile makes the folders again or drops its store, and succeeds (it failed with
    # exit 3, CacheDirUnusable, in 1 to 20 of 90 compiles: stop 54 review). A race test:
    # a run where the removals never meet a store passes either way.
    text = open(example("mnist_mlp")).read()
    sources = []
    for i in range(40):
        src = ctx.path("src", "race%d.tri" % i)
        write(src, text.replace("MnistMLP", "MnistMLP%d" % i))
        sources.append(src)
    cache = ctx.path("racing-cache")
    env = {"TRITONC_CACHE_DIR": cache}
    stop = threading.Event()

    def remove():
        while not stop.is_set():
            shutil.rmtree(cache, ignore_errors=True)

    remover = threading.Thread(target=remove)
    remover.start()
    failures = []
    try:
        for src in sources:
            proc, out = ctx.compile(src, "-q", env=env, rc=None)
            if proc.returncode != 0 or not os.path.exists(out):
                failures.append("%s: exit %d: %s" % (os.path.basename(src), proc.returncode,
                                                     proc.stderr.strip()[:300]))
    finally:
        stop.set()
        remover.join()
    check_eq(failures, [], "compiles that failed while the cache was being removed")


def default_interrupts():
    """In the child before exec: SIGINT and SIGQUIT at their default action, as in a
    terminal. A suite started in the background of a non-interactive shell (`cmd &`)
    inherits them ignored, and tritonc, like nohup'ed programs expect, leaves an ignored
    signal ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def test_signal_during_nvcc_stops_it_and_leaves_nothing(ctx):
    """SIGTERM or SIGINT sent to tritonc alone (as CI systems and `timeout` do) while nvcc
    builds the kernels: tritonc dies of the signal, nvcc and its children die with it (they
    once went on and wrote the library 20 s later), and no temporary file is left in the
    output folder (the staged .cu and nvcc's log once were)."""
    nvcc = ctx.path("bin", "slow_nvcc")
    pid_file = ctx.path("slow_nvcc.pid")
    write(nvcc, "#!/bin/sh\n"
                "out=; prev=\n"
                "for a in \"$@\"; do if [ \"$prev\" = \"-o\" ]; then out=$a; fi; prev=$a; done\n"
                "sleep 30 &\n"
                "echo \"$$ $!\" > '%s.tmp' && mv '%s.tmp' '%s'\n"
                "wait\n"
                "echo late > \"$out\"\n" % (pid_file, pid_file, pid_file))
    os.chmod(nvcc, 0o755)

    def alive(pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().split(") ")[-1][0] != "Z"  # a zombie has ended
        except FileNotFoundError:
            return False

    for sig in (signal.SIGTERM, signal.SIGINT):
        out_dir = ctx.fresh_dir()
        if os.path.exists(pid_file):
            os.unlink(pid_file)
        p = subprocess.Popen([ctx.tritonc, "compile", example("resnet18"), "--target", "cuda",
                              "--nvcc", nvcc, "--no-cache", "-o",
                              os.path.join(out_dir, "r.py")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ctx.env,
                             cwd=ctx.root, preexec_fn=default_interrupts)
        deadline = time.monotonic() + 20
        while not os.path.exists(pid_file) and time.monotonic() < deadline:
            time.sleep(0.01)
        check(os.path.exists(pid_file), "the fake nvcc never started")
        shell, sleeper = (int(x) for x in read(pid_file).split())
        p.send_signal(sig)
        p.wait(timeout=20)
        check_eq(p.returncode, -sig, "exit of tritonc killed by %s" % sig.name)
        deadline = time.monotonic() + 5
        while (alive(shell) or alive(sleeper)) and time.monotonic() < deadline:
            time.sleep(0.01)
        check(not alive(shell) and not alive(sleeper),
              "nvcc (or its child) still runs after tritonc died of %s" % sig.name)
        check_eq(sorted(os.listdir(out_dir)), [], "files in the output folder after %s" % sig.name)


def test_kill_during_large_write(ctx):
    big = write_big_model(ctx.path("src", "big.tri"), 8000, 5)
    ref = ctx.reference(big, "-O2")
    start = time.monotonic()
    ctx.compile(big, "-O2")
    cold = time.monotonic() - start
    size = max(os.path.getsize(p) for p in ctx.entries("l2"))
    check(size > 500000, "the big model's L2 entry is only %d bytes" % size)
    rng = random.Random(2024)
    attempts = killed = 0
    # until 8 compiles were killed, at least one of them in the middle of writing an entry
    while attempts < 40 and (killed < 8 or not ctx.temporaries()):
        attempts += 1
        ctx.run("cache", "clear")
        out = ctx.out_for(big)
        p = subprocess.Popen([ctx.tritonc, "compile", big, "-O2", "-o", out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ctx.env,
                             cwd=ctx.root)
        if attempts % 2 == 1:
            time.sleep(rng.uniform(0, cold * 1.1))
        else:  # kill as soon as a temporary entry file shows up: in the middle of its write
            deadline = time.monotonic() + 10
            seen = len(ctx.temporaries())
            while (p.poll() is None and len(ctx.temporaries()) == seen
                   and time.monotonic() < deadline):
                pass
        p.send_signal(signal.SIGKILL)
        p.wait()
        killed += p.returncode == -signal.SIGKILL
        # the output is written atomically: absent or complete
        if os.path.exists(out):
            same_bytes(read(out), ref["py"], "output of a killed compile")
        checked, valid, corrupt, lines = ctx.validate()
        check_eq(corrupt, 0, "kill %d: corrupt entries (%s)" % (attempts, lines))
    left = len(ctx.temporaries())
    ctx.note("%d of %d compiles killed, %d temporary entry files left behind by killed writes"
             % (killed, attempts, left))
    check(killed >= 8, "only %d of %d compiles were killed before they ended" % (killed, attempts))
    check(left >= 1, "no compile was killed in the middle of writing an entry (%d attempts)"
          % attempts)
    # a normal compile after all that, then a hit
    proc, out, d = compile_counted(ctx, big, "-O2")
    same_outputs(outputs(out), ref, "compile after the kills")
    check_eq(proc.stderr, "", "stderr of the compile after the kills")
    _, out, d = compile_counted(ctx, big, "-O2")
    expect_l3(d, True, "second compile after the kills")
    same_outputs(outputs(out), ref, "hit after the kills")
    check_eq(ctx.validate()[2], 0, "corrupt entries at the end")
    s = ctx.stats()  # the counters file survived processes killed while updating it
    check(s["levels"]["l3"]["hits"] >= 1, "stats after the kills: %r" % s["levels"]["l3"])

    # a stale temporary file in an entry's folder is never read as the entry
    entry = ctx.entries("l3")[0]
    stale = "%s.tmp.%d.%d" % (entry, 99999, 0)
    write(stale, read(entry)[:1000] + b"\xff" * 1000)  # looks like a half-written entry
    os.unlink(entry)
    _, out, d = compile_counted(ctx, big, "-O2")
    expect_l3(d, False, "entry removed, a stale temporary file in its place")
    check_eq(d.of("l3", "corrupt"), 0, "the temporary file was read as an entry (corrupt count)")
    same_outputs(outputs(out), ref, "compile next to a stale temporary file")
    check(os.path.exists(entry), "the entry was not written again")
    check_eq(ctx.stats()["levels"]["l3"]["entries"], len(ctx.entries("l3")),
             "stats counts temporary files as entries")
    checked, _, corrupt, _ = ctx.validate()
    check_eq((checked, corrupt), (len(ctx.entries("l2")) + len(ctx.entries("l3")), 0),
             "validate (checked, corrupt) with a temporary file present")
    old = time.time() - 2 * 3600
    for t in ctx.temporaries():
        os.utime(t, (old, old))
    stale = ctx.temporaries()
    proc = ctx.run("cache", "prune")
    check_eq(ctx.temporaries(), [], "temporary files older than an hour after cache prune")
    check(re.search(r"^removed %d stale temporary files? \(.+\) left by interrupted writes$"
                    % len(stale), proc.stdout, re.M) is not None,
          "cache prune does not say it removed %d temporary files: %r" % (len(stale), proc.stdout))
    # One dated far in the future (a cache copied off a machine whose clock was ahead) would
    # never grow an hour old: stale too, as such entries count as too old. One written a
    # moment ago may be a write in progress: kept.
    future = "%s.tmp.%d.%d" % (entry, 99998, 0)
    recent = "%s.tmp.%d.%d" % (entry, 99997, 0)
    write(future, b"\xff" * 100)
    write(recent, b"\xff" * 100)
    ahead = time.time() + 3 * 86400
    os.utime(future, (ahead, ahead))
    ctx.run("cache", "validate")
    check_eq(ctx.temporaries(), [recent], "temporary files after validate (future-dated kept?)")
    # `cache clear` (of the whole cache) removes the stale ones as well, and says so.
    write(future, b"\xff" * 100)
    os.utime(future, (ahead, ahead))
    proc = ctx.run("cache", "clear")
    check_eq(ctx.temporaries(), [recent], "temporary files after cache clear")
    check("removed 1 stale temporary file" in proc.stdout, "cache clear: %r" % proc.stdout)
    os.unlink(recent)


# ---- 9. unusable cache directory -----------------------------------------------------------------


def expect_one_unavailable(proc, what):
    """The default location unusable: one warning, the compile goes on (exit 0)."""
    check_eq(proc.returncode, 0, what + ": exit status (stderr %r)" % proc.stderr)
    n = proc.stderr.count("[CacheUnavailable]")
    check_eq(n, 1, what + ": [CacheUnavailable] warnings (stderr %r)" % proc.stderr)
    check("warning" in proc.stderr, what + ": not a warning: %r" % proc.stderr)


def expect_unusable_error(proc, out, what, named_by="TRITONC_CACHE_DIR"):
    """A cache directory the user named, unusable: TOOLCHAIN.md's exit 3 ("cache
    unusable"), one error that says who named it and how to go on, no output written."""
    check_eq(proc.returncode, 3, what + ": exit status (stderr %r)" % proc.stderr)
    n = proc.stderr.count("[CacheDirUnusable]")
    check_eq(n, 1, what + ": [CacheDirUnusable] errors (stderr %r)" % proc.stderr)
    check("error" in proc.stderr and named_by in proc.stderr and "--no-cache" in proc.stderr,
          what + ": the error: %r" % proc.stderr)
    check(not os.path.exists(out), what + ": an output was written")


def test_cache_dir_linked_to_a_folder_not_made_yet(ctx):
    # `~/.cache/tritonc -> /scratch/$USER/tritonc` on a fresh node: the folder the link names
    # is made, as a missing cache folder is (a compile said "not writable: No such file or
    # directory" and exited 3, while the cache commands took it for an empty cache).
    src = example("mnist_mlp")
    link = ctx.path("linked-cache")
    target = ctx.path("scratch", "user", "tritonc")
    os.symlink(target, link)
    env = {"TRITONC_CACHE_DIR": link}
    _, out = ctx.compile(src, env=env)
    same_outputs(outputs(out), ctx.reference(src), "compile through the link")
    check(os.path.islink(link) and os.path.isdir(os.path.join(target, "l3")),
          "the link's folder was not made (or the link was replaced)")
    levels = ctx.stats(env=env)["levels"]
    check_eq((levels["l2"]["entries"], levels["l3"]["entries"]), (1, 1), "entries through the link")


def test_unusable_cache_dir_is_an_environment_error(ctx):
    """A cache directory named by --cache-dir or $TRITONC_CACHE_DIR that cannot be used is an
    environment error (exit 3, nothing written), also under -Werror; the default location
    unusable (a home that is not a directory) is one warning and a normal compile."""
    src = example("mnist_mlp")
    ref = ctx.reference(src, "-O2")
    blocker = ctx.path("a-file")
    write(blocker, "not a directory\n")
    soft = Soft()

    def below_file(extra, what):
        proc, out = ctx.compile(src, "-O2", *extra, env={"TRITONC_CACHE_DIR":
                                                         os.path.join(blocker, "cache")}, rc=None)
        expect_unusable_error(proc, out, what)
    soft("below a regular file", below_file, (), "below a regular file")
    soft("below a regular file, -Werror", below_file, ("-Werror",), "-Werror")
    soft("below a regular file, --verbose", below_file, ("--verbose",), "--verbose")

    def is_file():
        proc, out = ctx.compile(src, "-O2", env={"TRITONC_CACHE_DIR": blocker}, rc=None)
        expect_unusable_error(proc, out, "the cache directory is a regular file")
        check_eq(read(blocker), b"not a directory\n", "the regular file")
    soft("the cache directory is a regular file", is_file)

    def flag_wins():
        proc, out = ctx.compile(src, "-O2", "--cache-dir", os.path.join(blocker, "x"), rc=None)
        expect_unusable_error(proc, out, "--cache-dir below a regular file", "--cache-dir")
        check(not os.path.exists(ctx.cache), "$TRITONC_CACHE_DIR used despite --cache-dir")
    soft("--cache-dir below a regular file", flag_wins)

    def no_cache_goes_on():
        proc, out = ctx.compile(src, "-O2", "--no-cache",
                                env={"TRITONC_CACHE_DIR": blocker}, rc=None)
        check_eq(proc.returncode, 0, "--no-cache with an unusable cache: %r" % proc.stderr)
        same_outputs(outputs(out), ref, "--no-cache with an unusable cache")
    soft("--no-cache with an unusable cache directory", no_cache_goes_on)

    def default_location():
        proc, out = ctx.compile(src, "-O2", env={"HOME": blocker},
                                unset=("TRITONC_CACHE_DIR", "XDG_CACHE_HOME"), rc=None)
        expect_one_unavailable(proc, "the default location below a regular file")
        same_outputs(outputs(out), ref, "the default location below a regular file")
    soft("the default location below a regular file", default_location)

    def read_only():
        ro = ctx.path("ro-cache")
        os.makedirs(ro)
        if os.geteuid() != 0:
            os.chmod(ro, 0o555)
            proc, out = ctx.compile(src, "-O2", env={"TRITONC_CACHE_DIR": ro}, rc=None)
            os.chmod(ro, 0o755)
        else:
            # root writes anywhere: run the compiler as `nobody` on a directory `nobody` owns
            try:
                os.chown(ro, NOBODY, NOBODY)
                os.chmod(ro, 0o555)
                work = ctx.path("nobody")
                os.makedirs(work)
                os.chmod(work, 0o777)
                shutil.copy(src, work)
                for d in (ctx.root, os.path.dirname(ctx.root)):
                    os.chmod(d, 0o755)
                # can nobody run the compiler and read the source? (`check` uses no cache)
                probe = subprocess.run([ctx.tritonc, "check", os.path.join(work, "mnist_mlp.tri")],
                                       preexec_fn=as_nobody, capture_output=True, cwd=work,
                                       env=ctx.environ({"HOME": work}))
                check(probe.returncode == 0, "tritonc check as nobody: exit %d"
                      % probe.returncode)
            except Exception as e:  # noqa: BLE001
                ctx.note("read-only directory sub-case skipped: cannot run as nobody (%s)" % e)
                return
            ctx.note("running as root: the read-only directory sub-case runs as nobody")
            out = os.path.join(work, "out.py")
            proc = ctx.run("compile", os.path.join(work, "mnist_mlp.tri"), "-O2", "-o", out,
                           rc=None, env={"TRITONC_CACHE_DIR": ro, "HOME": work}, cwd=work,
                           preexec_fn=as_nobody)
        expect_unusable_error(proc, out, "read-only cache directory")
        check_eq(os.listdir(ro), [], "files written into the read-only directory")
    soft("read-only cache directory", read_only)

    def level_is_a_file():
        # A file where the cache keeps a level's folder: the compile names it (not the cache
        # directory, which is fine), stats and prune say so, validate removes it and the
        # next compile works.
        cache_dir = ctx.path("level-file-cache")
        os.makedirs(cache_dir)
        blocking = os.path.join(cache_dir, "l3")
        write(blocking, "")
        env = {"TRITONC_CACHE_DIR": cache_dir}
        proc, out = ctx.compile(src, "-O2", env=env, rc=None)
        expect_unusable_error(proc, out, "l3 is a file")
        check(blocking + " is not a directory" in proc.stderr,
              "the error does not name the file in the way: %r" % proc.stderr)
        for command in (("cache", "stats"), ("cache", "prune")):
            p = ctx.run(*command, rc=None, env=env)
            check_eq(p.returncode, 3, "%s with l3 a file: %r" % (" ".join(command), p.stderr))
            check("cache validate" in p.stderr, "%s does not say what removes it: %r"
                  % (" ".join(command), p.stderr))
        p = ctx.run("cache", "validate", rc=None, env=env)
        check_eq(p.returncode, 0, "validate with l3 a file: %r" % p.stderr)
        check("l3: a file where the cache keeps a folder" in p.stdout + p.stderr,
              "validate does not report the file: %r" % (p.stdout + p.stderr))
        check(not os.path.isfile(blocking), "validate left the file in place of l3")
        proc, out = ctx.compile(src, "-O2", env=env, rc=None)
        check_eq(proc.returncode, 0, "compile after validate: %r" % proc.stderr)
        same_outputs(outputs(out), ref, "compile after validate")
        # (A shard no entry uses: keys hash the compiler's identity, so which shards
        # hold entries changes with every build.)
        shard = next(p for p in (os.path.join(cache_dir, "l2", "%02x" % i) for i in range(256))
                     if not os.path.exists(p))
        write(shard, "")
        p = ctx.run("cache", "clear", rc=None, env=env)
        check_eq(p.returncode, 0, "clear with a shard that is a file: %r" % p.stderr)
        check(not os.path.exists(shard), "clear left the file in place of a shard folder")
        # Not in the way, left alone: a level linked to a folder elsewhere (another disk),
        # and a file whose name is not a shard's (a README).
        elsewhere = ctx.path("l3-elsewhere")
        os.makedirs(elsewhere)
        shutil.rmtree(os.path.join(cache_dir, "l3"))
        os.symlink(elsewhere, os.path.join(cache_dir, "l3"))
        readme = os.path.join(cache_dir, "l2", "README")
        write(readme, "notes\n")
        proc, out = ctx.compile(src, "-O2", env=env, rc=None)
        check_eq(proc.returncode, 0, "compile with l3 a link: %r" % proc.stderr)
        check(os.listdir(elsewhere), "nothing stored through the l3 link")
        for command in (("cache", "stats"), ("cache", "prune"), ("cache", "validate")):
            p = ctx.run(*command, rc=None, env=env)
            check_eq(p.returncode, 0, "%s with l3 a link and l2/README: %r"
                     % (" ".join(command), p.stderr))
        check(os.path.islink(os.path.join(cache_dir, "l3")), "validate removed the l3 link")
        check(os.path.exists(readme), "validate removed l2/README")
    soft("a file where a level's folder belongs", level_is_a_file)
    soft.done()


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def test_maintenance_fails_when_it_cannot_remove(ctx):
    """`cache clear`, `prune` and `validate` that cannot remove an entry (a cache another user
    owns) say so and exit 3 instead of reporting success; the entries stay valid."""
    src = example("mnist_mlp")
    cache = ctx.path("owned-cache")
    ctx.compile(src, "-O2", env={"TRITONC_CACHE_DIR": cache})
    before = len(ctx.entries("l3", cache)) + len(ctx.entries("l2", cache))
    check(before >= 2, "entries stored: %d" % before)
    preexec = None
    if os.geteuid() == 0:
        preexec = as_nobody  # root removes anything: act as another user
        for d in (ctx.root, os.path.dirname(ctx.root)):
            os.chmod(d, 0o755)
    else:
        for level in ("l2", "l3"):
            for sub in os.listdir(os.path.join(cache, level)):
                os.chmod(os.path.join(cache, level, sub), 0o555)
    for command in (["clear"], ["prune", "--days", "0"]):
        proc = ctx.run("cache", *command, "--cache-dir", cache, rc=None, preexec_fn=preexec)
        check_eq(proc.returncode, 3, "cache %s: exit (stderr %s)" % (command[0], proc.stderr))
        check("could not remove" in proc.stderr, "cache %s: %s" % (command[0], proc.stderr))
    after = len(ctx.entries("l3", cache)) + len(ctx.entries("l2", cache))
    check_eq(after, before, "entries left")
    if os.geteuid() != 0:
        for level in ("l2", "l3"):
            for sub in os.listdir(os.path.join(cache, level)):
                os.chmod(os.path.join(cache, level, sub), 0o755)
    ctx.run("cache", "validate", "--cache-dir", cache)


def test_cache_write_failure_is_an_environment_error(ctx):
    """The directory opens fine but an entry cannot be written (a level folder that is not a
    directory, a full disk): the named cache is unusable, exit 3, nothing written."""
    src = example("mnist_mlp")
    soft = Soft()
    for level in ("l2", "l3"):
        def blocked(level=level):
            cache = ctx.path("cache-%s-blocked" % level)
            write(os.path.join(cache, level), "not a directory\n")
            proc, out = ctx.compile(src, "-O2", env={"TRITONC_CACHE_DIR": cache}, rc=None)
            expect_unusable_error(proc, out, "%s is a regular file" % level)
            proc, out = ctx.compile(src, "-O2", "-Werror", env={"TRITONC_CACHE_DIR": cache},
                                    rc=None)
            expect_unusable_error(proc, out, "%s is a regular file, -Werror" % level)
        soft("<cache>/%s cannot be written" % level, blocked)

    def disk_full():
        mnt = ctx.path("tmpfs")
        os.makedirs(mnt)
        if os.geteuid() != 0 or shutil.which("mount") is None:
            ctx.note("full-disk sub-case skipped: needs root to mount a small tmpfs")
            return
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", mnt],
                           capture_output=True, text=True)
        if m.returncode != 0:
            ctx.note("full-disk sub-case skipped: cannot mount a tmpfs (%s)" % m.stderr.strip())
            return
        try:
            cache = os.path.join(mnt, "cache")
            os.makedirs(cache)
            try:  # fill the file system
                with open(os.path.join(mnt, "fill"), "wb") as f:
                    while True:
                        f.write(b"\0" * 4096)
                        f.flush()
            except OSError:
                pass
            proc, out = ctx.compile(src, "-O2", env={"TRITONC_CACHE_DIR": cache}, rc=None)
            expect_unusable_error(proc, out, "full disk")
        finally:
            if subprocess.run(["umount", mnt], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", mnt], capture_output=True)
    soft("disk full", disk_full)
    soft.done()


# ---- 10, 11. prune, limits, clear ----------------------------------------------------------------


def set_age(paths, seconds_ago):
    t = time.time() - seconds_ago
    for p in paths:
        os.utime(p, (t, t))


def test_prune_by_age_and_size(ctx):
    models = ("mnist_mlp", "resnet18", "resnet34", "vgg16", "cnn_cifar", "resnet_block")
    owned = {}
    for name in models:
        before = set(ctx.entries("l2") + ctx.entries("l3"))
        ctx.compile(example(name))
        owned[name] = sorted(set(ctx.entries("l2") + ctx.entries("l3")) - before)
        check_eq(len(owned[name]), 2, "new entries of %s" % name)
    day = 86400
    set_age(owned["mnist_mlp"] + owned["resnet18"], 10 * day)
    set_age(owned["resnet34"], 5 * day)
    before = ctx.levels()
    proc = ctx.run("cache", "prune", "--days", "7")
    check(proc.stdout.startswith("pruned 4 entries"), "prune --days 7 says %r" % proc.stdout)
    for name in models:
        gone = name in ("mnist_mlp", "resnet18")
        for p in owned[name]:
            check(os.path.exists(p) != gone, "%s entry %s after prune --days 7: %s" % (
                name, os.path.relpath(p, ctx.cache), "kept" if not gone else "removed"))
    after = ctx.levels()
    check_eq((after["l2"]["evicted"] - before["l2"]["evicted"],
              after["l3"]["evicted"] - before["l3"]["evicted"]), (2, 2),
             "evicted counters (l2, l3) after prune --days")
    check_eq((after["l2"]["entries"], after["l3"]["entries"]), (4, 4), "entries after prune --days")
    # recently used again = kept: a hit refreshes the last use
    set_age(owned["vgg16"], 20 * day)
    _, _, d = compile_counted(ctx, example("vgg16"))
    expect_l3(d, True, "vgg16 after aging")
    ctx.run("cache", "prune", "--days", "15")
    l3_vgg = [p for p in owned["vgg16"] if "/l3/" in p][0]
    l2_vgg = [p for p in owned["vgg16"] if "/l2/" in p][0]
    check(os.path.exists(l3_vgg), "an entry used by a hit was pruned as old (its last use was not"
          " refreshed)")
    check(not os.path.exists(l2_vgg), "the old L2 entry of vgg16 (not used by the L3 hit) was kept")

    # --max-size: the newest entries are kept, oldest first removed, until the rest fit
    for name in ("mnist_mlp", "resnet18", "vgg16"):
        ctx.compile(example(name), "-O2")
    files = ctx.entries("l2") + ctx.entries("l3")
    sizes = {p: os.path.getsize(p) for p in files}
    biggest = max(files, key=lambda p: (sizes[p], p))
    smallest = min(files, key=lambda p: (sizes[p], p))
    check(sizes[biggest] > sizes[smallest], "entries all have the same size")
    newest = [p for p in files if p not in (biggest, smallest)]
    order = newest + [biggest, smallest]  # newest first; the smallest is the least recently used
    for i, p in enumerate(order):
        set_age([p], 3600 * (i + 1))
    limit = sum(sizes[p] for p in newest) + sizes[smallest]
    proc = ctx.run("cache", "prune", "--max-size", str(limit))
    left = ctx.entries("l2") + ctx.entries("l3")
    total = sum(os.path.getsize(p) for p in left)
    check(total <= limit, "prune --max-size %d left %d bytes" % (limit, total))
    check(all(p in left for p in newest), "prune --max-size removed recently used entries")
    check(biggest not in left, "prune --max-size kept the entry that did not fit")
    check(smallest not in left,
          "prune --max-size %d kept the least recently used entry (%s, %d bytes, last used %dh "
          "ago) and removed a more recently used one (%s, %d bytes, last used %dh ago): not "
          "least-recently-used order" % (limit, os.path.relpath(smallest, ctx.cache),
                                         sizes[smallest], len(order),
                                         os.path.relpath(biggest, ctx.cache), sizes[biggest],
                                         len(order) - 1))


def test_prune_sizes_ttl_and_usage_errors(ctx):
    for name in ("mnist_mlp", "resnet18", "vgg16", "resnet50"):
        ctx.compile(example(name))
    files = ctx.entries("l2") + ctx.entries("l3")
    for i, p in enumerate(sorted(files, key=os.path.getsize)):  # the biggest is the oldest
        set_age([p], 60 * (i + 1))
    total = sum(os.path.getsize(p) for p in files)
    check(total > 3 * 1024, "cache smaller than expected: %d bytes" % total)
    before = ctx.levels()
    proc = ctx.run("cache", "prune", "--max-size", "3K")
    left = ctx.entries("l2") + ctx.entries("l3")
    check(sum(os.path.getsize(p) for p in left) <= 3 * 1024, "prune --max-size 3K left more")
    removed = len(files) - len(left)
    check(proc.stdout.startswith("pruned %d entries" % removed), "prune says %r" % proc.stdout)
    after = ctx.levels()
    check_eq(after["l2"]["evicted"] + after["l3"]["evicted"] - before["l2"]["evicted"]
             - before["l3"]["evicted"], removed, "evicted counters after prune --max-size")
    for bad in ("3Q", "big", "-5", "12X"):
        proc = ctx.run("cache", "prune", "--max-size", bad, rc=2)
        # worded as every other usage error: the message, then where to read the usage
        check_eq(proc.stderr.splitlines()[-1:], ["Run 'tritonc cache prune --help' for usage."],
                 "last line of the --max-size %s error (%r)" % (bad, proc.stderr))
    ctx.run("cache", "prune", "--days", "x", rc=2)
    for size in ("500M", "2G", "4096", "1.5GiB"):
        ctx.run("cache", "prune", "--max-size", size)
    check_eq(ctx.entries("l2") + ctx.entries("l3"), left, "entries after generous prunes")

    # the configured TTL (L3 only) applies to a plain `cache prune`
    ctx.run("cache", "clear")
    for name in ("mnist_mlp", "resnet18"):
        ctx.compile(example(name))
    ctx.run("config", "set", "cache.l3_code.ttl_days", "3")
    old = [p for p in ctx.entries("l3") + ctx.entries("l2")]
    set_age(old, 5 * 86400)
    ctx.compile(example("vgg16"))
    ctx.run("cache", "prune")
    for p in old:
        check(os.path.exists(p) == ("/l2/" in p), "after prune with ttl_days 3: %s %s" % (
            os.path.relpath(p, ctx.cache), "kept" if os.path.exists(p) else "removed"))
    check_eq(len(ctx.entries("l3")), 1, "L3 entries after the TTL prune (vgg16 only)")


def test_ttl_expires_an_entry_at_lookup(ctx):
    """An L3 entry unused for longer than cache.l3_code.ttl_days is a miss at its next
    lookup (removed, counted as evicted, stored again), not only after the daily sweep;
    one younger than the TTL is a hit. The sweep has just run (the first compile's), so
    only the lookup can expire it."""
    src = example("mnist_mlp")
    ctx.compile(src)
    ctx.run("config", "set", "cache.l3_code.ttl_days", "3")
    (entry,) = ctx.entries("l3")
    set_age([entry], 2 * 86400)
    _, _, d = compile_counted(ctx, src)
    expect_l3(d, True, "an entry 2 days old under ttl_days 3")
    set_age([entry], 4 * 86400)
    _, _, d = compile_counted(ctx, src)
    expect_l3(d, False, "an entry 4 days old under ttl_days 3")
    check_eq((d.of("l3", "evicted"), d.of("l3", "stores")), (1, 1),
             "(evicted, stores) of L3 for the expired entry")
    check_eq(ctx.entries("l3"), [entry], "the entry is stored again")
    check(os.path.getmtime(entry) > time.time() - 600, "the stored entry is new")
    _, _, d = compile_counted(ctx, src)
    expect_l3(d, True, "the entry stored again")


def test_limits_evict_automatically(ctx):
    nvcc, nvcc_runs = ctx.fake_nvcc(mode="random", size=256 * 1024)
    ctx.run("config", "set", "cache.l3_code.max_size_mb", "1")
    check_eq(ctx.run("config", "get", "cache.l3_code.max_size_mb").stdout, "1\n", "config get")
    limit = 1024 * 1024
    check_eq(ctx.stats()["levels"]["l3"]["limit_bytes"], limit, "stats L3 limit_bytes")
    sources = []
    text = open(example("mnist_mlp")).read()
    for i in range(8):
        # Each variant's kernels differ (10 + i classes), so each builds a library of its
        # own: a comment alone would share one (the library's key is its .cu).
        src = ctx.path("src", "variant%d.tri" % i)
        write(src, text.replace("10]", "%d]" % (10 + i)))
        sources.append(src)
    evicted_before = 0
    for i, src in enumerate(sources):
        ctx.compile(src, "--target", "cuda", "--nvcc", nvcc)
        s = ctx.levels()["l3"]
        on_disk = sum(os.path.getsize(p) for p in ctx.entries("l3"))
        check_eq(s["size_bytes"], on_disk, "stats L3 size_bytes")
        check(on_disk <= limit, "after compile %d the L3 level holds %d bytes, over its limit of %d"
              % (i + 1, on_disk, limit))
        if s["evicted"] > evicted_before:
            check(on_disk <= limit * 0.9, "after an eviction the L3 level holds %d bytes, more "
                  "than 90%% of the limit" % on_disk)
        evicted_before = s["evicted"]
    check(evicted_before > 0, "8 entries of >256 KiB under a 1 MiB limit and nothing evicted")
    check_eq(runs(nvcc_runs), 8, "fake nvcc runs")
    _, _, d = compile_counted(ctx, sources[-1], "--target", "cuda", "--nvcc", nvcc)
    expect_cuda(d, True, True, "the most recently stored entries")
    _, _, d = compile_counted(ctx, sources[0], "--target", "cuda", "--nvcc", nvcc)
    expect_cuda(d, False, False, "the least recently used entries")
    check(ctx.levels()["l2"]["evicted"] == 0, "L2 entries evicted under the L3 limit")

    # the L2 limit
    ctx.run("config", "set", "cache.l2_ir.max_size_mb", "1")
    for seed in range(3):
        big = write_big_model(ctx.path("src", "big%d.tri" % seed), 4000, 100 + seed)
        _, out = ctx.compile(big)
        same_outputs(outputs(out), ctx.reference(big), "big model %d" % seed)
        on_disk = sum(os.path.getsize(p) for p in ctx.entries("l2"))
        check(on_disk <= limit, "after big model %d the L2 level holds %d bytes, over its limit"
              % (seed, on_disk))
    check(ctx.levels()["l2"]["evicted"] > 0, "nothing evicted from L2 under its limit")

    # Eviction works from the sizes in <cache>/stats: with that file lost or damaged, the
    # next compile counts them on disk (it stored and evicted nothing, 3 MiB over 1 MiB).
    stats_file = os.path.join(ctx.cache, "stats")
    for round, damage in enumerate((None, b"garbage\n")):
        ctx.run("config", "set", "cache.l2_ir.max_size_mb", "0")  # no limit while filling
        for seed in range(3):
            ctx.compile(write_big_model(ctx.path("src", "fill%d_%d.tri" % (round, seed)), 4000,
                                        200 + 10 * round + seed))
        check(sum(os.path.getsize(p) for p in ctx.entries("l2")) > limit, "L2 not over 1 MiB")
        if damage is None:
            os.unlink(stats_file)
        else:
            write(stats_file, damage)
        ctx.run("config", "set", "cache.l2_ir.max_size_mb", "1")
        ctx.compile(example("resnet18"), "-O%d" % round)
        on_disk = sum(os.path.getsize(p) for p in ctx.entries("l2"))
        check(on_disk <= limit, "stats %s: the L2 level holds %d bytes after a compile, over its "
              "limit" % ("removed" if damage is None else "damaged", on_disk))
        check_eq(ctx.levels()["l2"]["size_bytes"], on_disk, "stats L2 size_bytes")


def test_clear(ctx):
    models = (example("mnist_mlp"), example("resnet18"))
    for src in models:
        ctx.compile(src)
        ctx.compile(src)  # a hit, to have counters
    s = ctx.levels()
    check_eq((s["l2"]["entries"], s["l3"]["entries"], s["l3"]["hits"]), (2, 2, 2), "before clear")
    proc = ctx.run("cache", "clear", "--level", "l2")
    check(proc.stdout.startswith("cleared l2: removed 2 entries"), "clear --level l2 says %r"
          % proc.stdout)
    s = ctx.levels()
    check_eq((s["l2"]["entries"], s["l2"]["hits"], s["l2"]["misses"], s["l2"]["size_bytes"]),
             (0, 0, 0, 0), "L2 after clear --level l2")
    check_eq((s["l3"]["entries"], s["l3"]["hits"]), (2, 2), "L3 after clear --level l2")
    check_eq(ctx.entries("l2"), [], "L2 files after clear --level l2")
    for src in models:
        _, out, d = compile_counted(ctx, src)
        expect_l3(d, True, "after clear --level l2")
        same_outputs(outputs(out), ctx.reference(src), "after clear --level l2")
    # L3 cleared, L2 kept
    for src in models:
        ctx.compile(src, "-O2")  # fills L2 again (and L3 for -O2)
    proc = ctx.run("cache", "clear", "--level", "l3")
    check(proc.stdout.startswith("cleared l3: removed 4 entries"), "clear --level l3 says %r"
          % proc.stdout)
    s = ctx.levels()
    check_eq((s["l3"]["entries"], s["l3"]["hits"], s["l3"]["misses"]), (0, 0, 0),
             "L3 after clear --level l3")
    check_eq(s["l2"]["entries"], 2, "L2 entries after clear --level l3")
    for src in models:
        _, out, d = compile_counted(ctx, src, "-O3")
        expect_l3(d, False, "after clear --level l3")
        check_eq(d.of("l2", "hits"), 1, "L2 hit after clear --level l3")
        same_outputs(outputs(out), ctx.reference(src, "-O3"), "after clear --level l3")
    proc = ctx.run("cache", "clear")
    check(proc.stdout.startswith("cleared the cache: removed 4 entries"), "clear says %r"
          % proc.stdout)
    s = ctx.stats()
    check_eq(s["total"]["entries"], 0, "entries after clear")
    check_eq(s["total"]["hits"] + s["total"]["misses"], 0, "counters after clear")
    check_eq(ctx.entries("l2") + ctx.entries("l3"), [], "entry files after clear")
    ctx.run("cache", "clear", "--level", "l1")
    ctx.run("cache", "clear", "--level", "l4", rc=2)
    ctx.run("cache", "clear", "--cache-dir", ctx.path("never-created"))
    check(not os.path.exists(ctx.path("never-created")) or
          ctx.entries("l3", ctx.path("never-created")) == [], "clear of a missing directory")
    _, out, d = compile_counted(ctx, models[0])
    expect_l3(d, False, "after clear")
    same_outputs(outputs(out), ctx.reference(models[0]), "after clear")
    # Several levels at once: --level repeated or comma-separated, each named once.
    ctx.compile(models[1])
    for levels in (("--level", "l3", "--level", "L2"), ("--level", "l3,l2,l3")):
        ctx.compile(models[0], "-O2")
        proc = ctx.run("cache", "clear", *levels)
        check(proc.stdout.startswith("cleared l2, l3: removed "), "clear %s says %r"
              % (" ".join(levels), proc.stdout))
        check_eq(ctx.entries("l2") + ctx.entries("l3"), [], "entries after clear %s"
                 % " ".join(levels))


# ---- 12. diagnostics -----------------------------------------------------------------------------


def test_warnings_replayed_on_hits(ctx):
    src = ctx.path("src", "warn.tri")
    write(src, WARN_SOURCE)
    ref = ctx.reference(src)
    proc1, out1, d = compile_counted(ctx, src, cwd=ctx.path("src"))
    expect_l3(d, False, "first compile")
    check("[ChainedComparison]" in proc1.stderr and "warning:" in proc1.stderr,
          "no warning on the first compile: %r" % proc1.stderr)
    same_outputs(outputs(out1), ref, "first compile")
    proc2, out2, d = compile_counted(ctx, src, cwd=ctx.path("src"))
    expect_l3(d, True, "second compile")
    check_eq(proc2.stderr, proc1.stderr, "stderr of the hit vs the miss")
    same_outputs(outputs(out2), ref, "hit")

    # colours: the hit prints what a compile without the cache prints
    color = ctx.run("compile", src, "-o", ctx.out_for(src), "--no-cache", "--color=always",
                    cwd=ctx.path("src")).stderr
    check("\x1b[" in color, "no colours with --color=always: %r" % color)
    proc, _, d = compile_counted(ctx, src, "--color=always", cwd=ctx.path("src"))
    expect_l3(d, True, "--color=always")
    check_eq(proc.stderr, color, "stderr of a --color=always hit")

    # -Werror on a hit: exit 1, nothing written, an existing output left alone
    out = ctx.out_for(src)
    proc, _, d = compile_counted(ctx, src, "-Werror", out=out, rc=1)
    expect_l3(d, True, "-Werror")
    check(not os.path.exists(out), "-Werror on a hit wrote %s" % out)
    check("error:" in proc.stderr and "[-Werror,ChainedComparison]" in proc.stderr,
          "-Werror on a hit: %r" % proc.stderr)
    write(out, b"previous\n")
    ctx.compile(src, "-Werror", out=out, rc=1)
    check_eq(read(out), b"previous\n", "existing output after a failed -Werror hit")
    # -q on a hit: nothing printed
    proc, out, d = compile_counted(ctx, src, "-q")
    expect_l3(d, True, "-q")
    check_eq(proc.stderr, "", "stderr of -q on a hit")
    same_outputs(outputs(out), ref, "-q hit")
    # JSON diagnostics on a hit
    proc, out, d = compile_counted(ctx, src, "--diagnostics-format=json")
    expect_l3(d, True, "json")
    lines = proc.stderr.splitlines()
    check_eq(len(lines), 1, "JSON diagnostic lines on a hit (%r)" % proc.stderr)
    diag = json.loads(lines[0])
    check_eq((diag["code"], diag["severity"], diag["file"], diag["line"]),
             ("ChainedComparison", "warning", src, 3), "JSON diagnostic on a hit")
    # an L2 hit replays the warning too (-O2 after -O1), and -Werror applies to it
    proc, out, d = compile_counted(ctx, src, "-O2", "-Werror", rc=1)
    check_eq((d.of("l3", "misses"), d.of("l2", "hits")), (1, 1), "-O2 -Werror: L3 miss, L2 hit")
    check("error:" in proc.stderr, "-O2 -Werror on an L2 hit: %r" % proc.stderr)
    check(not os.path.exists(out), "-O2 -Werror on an L2 hit wrote the output")
    proc, out, d = compile_counted(ctx, src, "-O2")
    check_eq(proc.stderr.count("[ChainedComparison]"), 1, "warnings of an L2 hit (%r)"
             % proc.stderr)
    same_outputs(outputs(out), ctx.reference(src, "-O2"), "-O2")
    proc, out, d = compile_counted(ctx, src, "-O2")
    expect_l3(d, True, "-O2 again")
    check_eq(proc.stderr.count("[ChainedComparison]"), 1, "warnings of the -O2 L3 hit")
    # a copy elsewhere: the replayed warning names the copy
    copy = ctx.path("elsewhere", "renamed.tri")
    write(copy, WARN_SOURCE)
    proc, out, d = compile_counted(ctx, copy)
    expect_l3(d, True, "copy")
    check(copy + ":3:" in proc.stderr and "warn.tri" not in proc.stderr,
          "the warning replayed for the copy does not name it: %r" % proc.stderr)


def test_files_with_errors_are_never_cached(ctx):
    bad = ctx.path("src", "bad.tri")
    write(bad, ERROR_SOURCE)
    first = ctx.compile(bad, rc=1)[0]
    check("error:" in first.stderr, "no error: %r" % first.stderr)
    second, out, d = compile_counted(ctx, bad, rc=1)
    check_eq(second.stderr, first.stderr, "stderr of the second compile of a file with errors")
    check(not os.path.exists(out), "output written for a file with errors")
    check_eq(d.of("l3", "hits"), 0, "L3 hits for a file with errors")
    check_eq(ctx.entries("l2") + ctx.entries("l3"), [], "entries stored for a file with errors")
    # -Werror on a miss: an error, so nothing stored; without -Werror afterwards a miss
    warn = ctx.path("src", "warn.tri")
    write(warn, WARN_SOURCE)
    ctx.compile(warn, "-Werror", rc=1)
    check_eq(ctx.entries("l3"), [], "L3 entries after a failed -Werror compile")
    proc, out, d = compile_counted(ctx, warn)
    expect_l3(d, False, "after a failed -Werror compile")
    check("warning:" in proc.stderr, "no warning after a failed -Werror compile: %r" % proc.stderr)
    same_outputs(outputs(out), ctx.reference(warn), "after a failed -Werror compile")
    # a multi-file compile with one bad file stores nothing either
    good = example("mnist_mlp")
    ctx.run("cache", "clear")
    ctx.run("compile", good, bad, "-o", ctx.fresh_dir(), rc=1)
    check_eq(ctx.entries("l3"), [], "L3 entries after a multi-file compile with an error")


# ---- 13. turning the cache off -------------------------------------------------------------------


def no_entries(ctx, what):
    check(ctx.entries("l2") + ctx.entries("l3") == [], "%s: entries were created" % what)


def test_cache_disabled(ctx):
    src = example("mnist_mlp")
    ref = ctx.reference(src)
    no_entries(ctx, "--no-cache")
    check(not os.path.exists(ctx.cache), "--no-cache created the cache directory")
    _, out = ctx.compile(src, env={"TRITONC_NO_CACHE": "1"})
    same_outputs(outputs(out), ref, "TRITONC_NO_CACHE=1")
    no_entries(ctx, "TRITONC_NO_CACHE=1")
    s = ctx.stats(env={"TRITONC_NO_CACHE": "1"})
    check_eq((s["enabled"], s["disabled_by"]), (False, "TRITONC_NO_CACHE"),
             "stats with TRITONC_NO_CACHE=1")
    ctx.run("config", "set", "cache.enabled", "false")
    check_eq(ctx.run("config", "get", "cache.enabled").stdout, "false\n", "config get")
    _, out = ctx.compile(src)
    same_outputs(outputs(out), ref, "cache.enabled false")
    no_entries(ctx, "cache.enabled false")
    s = ctx.stats()
    check(s["enabled"] is False and s["disabled_by"] and "cache.enabled" in s["disabled_by"],
          "stats with cache.enabled false: enabled %r, disabled_by %r" % (s["enabled"],
                                                                         s["disabled_by"]))
    check_eq(s["config_file_exists"], True, "config_file_exists")
    text = ctx.run("cache", "stats").stdout
    check(re.search(r"^enabled\s+no\b", text, re.M) is not None, "cache stats text: %r" % text)
    ctx.run("config", "set", "cache.enabled", "true")
    _, out, d = compile_counted(ctx, src)
    expect_l3(d, False, "cache enabled again")
    check_eq(len(ctx.entries("l3")), 1, "L3 entries with the cache enabled again")
    # --no-cache on a populated cache: not read, not counted
    _, out, d = compile_counted(ctx, src, "--no-cache")
    check_eq(d.of("l3", "hits") + d.of("l3", "misses"), 0, "--no-cache lookups")
    same_outputs(outputs(out), ref, "--no-cache with a populated cache")


def test_debugging_flags_bypass_cache(ctx):
    src = example("resnet18")
    ctx.compile(src)  # populated: a lookup would hit
    cases = [("--stop-after=opt",), ("--stop-after=emit",), ("--dump-ir",), ("--dump-code",),
             ("--dump-tokens",), ("--dump-ast",), ("--print-after-all",), ("--verify-each",),
             ("--dump-ir", "-O2")]
    soft = Soft()
    for flags in cases:
        def one(flags=flags):
            out = ctx.out_for(src)
            d = Delta(ctx)
            proc = ctx.run("compile", src, "-o", out, *flags)
            d.done()
            for level in ("l2", "l3"):
                check_eq(d.of(level, "hits") + d.of(level, "misses") + d.of(level, "stores"), 0,
                         "%s: %s lookups and stores" % (" ".join(flags), level))
            if "--dump-code" in flags:
                ref = ctx.run("compile", src, "-o", ctx.out_for(src), "--no-cache", *flags)
                check(proc.stdout and proc.stdout == ref.stdout, "--dump-code output differs")
            if "--verify-each" in flags:
                same_outputs(outputs(out), ctx.reference(src), "--verify-each")
        soft(" ".join(flags), one)

    def check_command():
        d = Delta(ctx)
        ctx.run("check", src)
        d.done()
        for level in ("l2", "l3"):
            check_eq(d.of(level, "hits") + d.of(level, "misses") + d.of(level, "stores"), 0,
                     "tritonc check: %s lookups and stores" % level)
    soft("tritonc check", check_command)
    check_eq(len(ctx.entries("l3")), 1, "L3 entries after the debugging runs")
    soft.done()


# ---- 14. configuration ---------------------------------------------------------------------------


def test_config_get_set_and_errors(ctx):
    # cache.dir and cache.enabled are the values in effect, as a compile resolves them.
    defaults = {"cache.enabled": "true", "cache.dir": ctx.env["TRITONC_CACHE_DIR"],
                "cache.l2_ir.max_size_mb": "1024", "cache.l3_code.max_size_mb": "4096",
                "cache.l3_code.ttl_days": "30"}
    for key, value in defaults.items():
        check_eq(ctx.run("config", "get", key).stdout, value + "\n", "default of " + key)
    xdg = ctx.path("xdg")
    check_eq(ctx.run("config", "get", "cache.dir", env={"XDG_CACHE_HOME": xdg},
                     unset=("TRITONC_CACHE_DIR",)).stdout, xdg + "/tritonc\n",
             "cache.dir from XDG_CACHE_HOME")
    home = ctx.path("home")
    check_eq(ctx.run("config", "get", "cache.dir", env={"HOME": home},
                     unset=("TRITONC_CACHE_DIR", "XDG_CACHE_HOME")).stdout,
             home + "/.cache/tritonc\n", "cache.dir from HOME")
    # Without $HOME, the home directory of the user's /etc/passwd entry.
    check_eq(ctx.run("config", "get", "cache.dir",
                     unset=("TRITONC_CACHE_DIR", "XDG_CACHE_HOME", "HOME")).stdout,
             pwd.getpwuid(os.getuid()).pw_dir.rstrip("/") + "/.cache/tritonc\n",
             "cache.dir from /etc/passwd")
    check_eq(ctx.run("config", "get", "cache.enabled", env={"TRITONC_NO_CACHE": "1"}).stdout,
             "false\n", "cache.enabled with TRITONC_NO_CACHE=1")
    check(not os.path.exists(ctx.config), "config get created the file")
    values = {"cache.enabled": ("yes", "true"), "cache.dir": (ctx.path("cfg-cache"), None),
              "cache.l2_ir.max_size_mb": ("64", None), "cache.l3_code.max_size_mb": ("128", None),
              "cache.l3_code.ttl_days": ("0", None)}
    for key, (value, normalized) in values.items():
        ctx.run("config", "set", key, value)
    for key, (value, normalized) in values.items():  # every key kept
        check_eq(ctx.run("config", "get", key, unset=("TRITONC_CACHE_DIR",)).stdout,
                 (normalized or value) + "\n", "get " + key)
    check_eq(ctx.run("config", "get", "cache.dir").stdout, ctx.env["TRITONC_CACHE_DIR"] + "\n",
             "TRITONC_CACHE_DIR overrides cache.dir")
    s = ctx.stats(unset=("TRITONC_CACHE_DIR",))
    check_eq((s["levels"]["l2"]["limit_bytes"], s["levels"]["l3"]["limit_bytes"]),
             (64 << 20, 128 << 20), "limits in stats")
    check_eq(s["config_file_exists"], True, "config_file_exists")
    check_eq(s["cache_dir"], ctx.path("cfg-cache"), "cache_dir from cache.dir")
    text = read(ctx.config)
    for bad_key in ("cache.enable", "cache.l3.max_size_mb", "nonsense", "cache"):
        ctx.run("config", "get", bad_key, rc=2)
        ctx.run("config", "set", bad_key, "1", rc=2)
    for key, bad in (("cache.enabled", "maybe"), ("cache.l3_code.max_size_mb", "-1"),
                     ("cache.l3_code.max_size_mb", "1.5"), ("cache.l2_ir.max_size_mb", "lots"),
                     ("cache.l3_code.ttl_days", "3d"), ("cache.dir", "")):
        proc = ctx.run("config", "set", key, bad, rc=2)
        check(proc.stderr, "no message for a bad value of " + key)
    check_eq(read(ctx.config), text, "config file after rejected sets")
    # YAML's boolean spellings, in a file written by hand and through `config set`.
    for spelled, want in (("False", "false"), ("TRUE", "true"), ("off", "false"),
                          ("True", "true")):
        write(ctx.config, "cache:\n  enabled: %s\n" % spelled)
        proc = ctx.run("config", "get", "cache.enabled", unset=("TRITONC_NO_CACHE",))
        check_eq((proc.stdout, proc.stderr), (want + "\n", ""), "enabled: " + spelled)
        ctx.run("config", "set", "cache.enabled", spelled)
    write(ctx.config, text)
    proc = ctx.run("config", "get", "cache.l3_code.max_size", rc=2)
    check("cache.l3_code.max_size_mb" in proc.stderr, "no suggestion for a misspelled key: %r"
          % proc.stderr)


def test_config_sets_in_parallel_keep_every_key(ctx):
    # Each `config set` reads, edits and renames the file: run at once for different keys
    # (a provisioning script's), the last rename dropped the others' keys in a quarter of
    # the rounds, all exiting 0. They now take a lock on the folder in turn.
    values = {"cache.l2_ir.max_size_mb": "11", "cache.l3_code.max_size_mb": "22",
              "cache.l3_code.ttl_days": "33", "cache.enabled": "false"}
    try:
        for _ in range(12):
            if os.path.exists(ctx.config):
                os.unlink(ctx.config)
            procs = [subprocess.Popen([ctx.tritonc, "config", "set", key, value],
                                      env=ctx.environ(), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
                     for key, value in values.items()]
            for proc in procs:
                _, err = proc.communicate(timeout=60)
                check_eq(proc.returncode, 0, "config set: %s" % err)
            for key, value in values.items():
                check_eq(ctx.run("config", "get", key).stdout, value + "\n",
                         "%s after parallel sets" % key)
    finally:
        if os.path.exists(ctx.config):
            os.unlink(ctx.config)


def test_config_set_keeps_comments_and_layout(ctx):
    """`config set` edits the file as `git config` does: comments, order and the spelling of
    other keys stay; a new key goes into the section that exists, a changed value is replaced
    where it is (a trailing comment kept); an empty section is no unknown key."""
    write(ctx.config, "# team settings\ncache:\n  # small disk\n  l2_ir:\n"
                      "    max_size_mb: 10   # MiB\ncache.l3_code.ttl_days: 3  # flat\n")
    ctx.run("config", "set", "cache.l2_ir.max_size_mb", "20")
    ctx.run("config", "set", "cache.enabled", "off")
    ctx.run("config", "set", "cache.l3_code.ttl_days", "9")
    ctx.run("config", "set", "cache.dir", "/tmp/a dir: #x")
    check_eq(read(ctx.config).decode(),
             "# team settings\ncache:\n  dir: \"/tmp/a dir: #x\"\n  enabled: false\n"
             "  # small disk\n  l2_ir:\n    max_size_mb: 20   # MiB\n"
             "cache.l3_code.ttl_days: 9  # flat\n", "config file after sets")
    for key, value in (("cache.l2_ir.max_size_mb", "20"), ("cache.enabled", "false"),
                       ("cache.l3_code.ttl_days", "9"), ("cache.dir", "/tmp/a dir: #x")):
        check_eq(ctx.run("config", "get", key, unset=("TRITONC_CACHE_DIR",)).stdout,
                 value + "\n", "get " + key)
    write(ctx.config, "cache:\n")
    proc = ctx.run("config", "get", "cache.enabled")
    check_eq((proc.stdout, proc.stderr), ("true\n", ""), "an empty section")
    ctx.run("config", "set", "cache.enabled", "false")
    check_eq(ctx.run("config", "get", "cache.enabled").stdout, "false\n", "set in an empty section")


def test_config_keys_written_half_flat(ctx):
    """A key spelled partly flat and partly nested (`cache.l3_code:` then `max_size_mb:`) is
    read as the other spellings are (it was counted as known and never read: no effect, no
    warning), a bad value under it is reported, and `config set` edits it in place."""
    for text in ("cache.l3_code:\n  max_size_mb: 100\n", "cache:\n  l3_code.max_size_mb: 100\n"):
        write(ctx.config, text)
        proc = ctx.run("config", "get", "cache.l3_code.max_size_mb")
        check_eq((proc.stdout, proc.stderr), ("100\n", ""), "get from %r" % text)
        check_eq(ctx.stats()["levels"]["l3"]["limit_bytes"], 100 << 20, "limit from %r" % text)
        ctx.run("config", "set", "cache.l3_code.max_size_mb", "200")
        check_eq(read(ctx.config).decode(), text.replace("100", "200"), "set in %r" % text)
        check_eq(ctx.run("config", "get", "cache.l3_code.max_size_mb").stdout, "200\n",
                 "get after set in %r" % text)
    write(ctx.config, "cache.l3_code:\n  max_size_mb: banana\n")
    proc = ctx.run("cache", "stats")
    check("ConfigIgnored" in proc.stderr and "banana" in proc.stderr,
          "a bad value spelled half flat is reported:\n" + proc.stderr)
    # In JSON the warning names the configuration file as its "file", as every diagnostic
    # about one file does.
    proc = ctx.run("compile", example("mnist_mlp"), "-o", ctx.path("cfg.py"),
                   "--diagnostics-format=json")
    lines = [json.loads(line) for line in proc.stderr.splitlines()]
    check_eq([(d["code"], d["file"]) for d in lines], [("ConfigIgnored", ctx.config)],
             "JSON ConfigIgnored")


def test_cache_dir_precedence(ctx):
    src = example("mnist_mlp")
    cfg_dir, env_dir, flag_dir = ctx.path("from-config"), ctx.path("from-env"), ctx.path("flag")
    xdg = ctx.path("xdg")

    def cleared(d):
        return len(ctx.entries("l3", d)) == 0

    ctx.run("config", "set", "cache.dir", cfg_dir)
    ctx.compile(src, unset=("TRITONC_CACHE_DIR",))
    check_eq(len(ctx.entries("l3", cfg_dir)), 1, "cache.dir used without $TRITONC_CACHE_DIR")
    ctx.compile(src, env={"TRITONC_CACHE_DIR": env_dir})
    check_eq(len(ctx.entries("l3", env_dir)), 1, "$TRITONC_CACHE_DIR over cache.dir")
    ctx.compile(src, "--cache-dir", flag_dir, env={"TRITONC_CACHE_DIR": env_dir})
    check_eq(len(ctx.entries("l3", flag_dir)), 1, "--cache-dir over $TRITONC_CACHE_DIR")
    check_eq(len(ctx.entries("l3", env_dir)), 1, "$TRITONC_CACHE_DIR untouched with --cache-dir")
    s = ctx.stats(unset=("TRITONC_CACHE_DIR",))
    check_eq((s["cache_dir"], s["levels"]["l3"]["entries"]), (cfg_dir, 1), "stats of cache.dir")
    ctx.run("cache", "clear", "--cache-dir", flag_dir)
    check(cleared(flag_dir) and not cleared(env_dir) and not cleared(cfg_dir),
          "cache clear --cache-dir cleared another directory")
    os.unlink(ctx.config)
    ctx.compile(src, unset=("TRITONC_CACHE_DIR",), env={"XDG_CACHE_HOME": xdg})
    check_eq(len(ctx.entries("l3", os.path.join(xdg, "tritonc"))), 1, "$XDG_CACHE_HOME/tritonc")
    ctx.compile(src, unset=("TRITONC_CACHE_DIR", "XDG_CACHE_HOME"))
    check_eq(len(ctx.entries("l3", os.path.join(ctx.home, ".cache", "tritonc"))), 1,
             "~/.cache/tritonc")
    # without $TRITONC_CONFIG: ~/.config/tritonc/config.yaml
    ctx.run("config", "set", "cache.dir", cfg_dir + "2", unset=("TRITONC_CONFIG",))
    check(os.path.exists(os.path.join(ctx.home, ".config", "tritonc", "config.yaml")),
          "config set without $TRITONC_CONFIG did not write ~/.config/tritonc/config.yaml")
    ctx.compile(src, unset=("TRITONC_CACHE_DIR", "TRITONC_CONFIG"))
    check_eq(len(ctx.entries("l3", cfg_dir + "2")), 1, "cache.dir of ~/.config/tritonc/config.yaml")


def test_broken_config_is_ignored_with_a_warning(ctx):
    src = example("mnist_mlp")
    ref = ctx.reference(src)
    soft = Soft()
    for what, text in (("invalid YAML", "cache: [unclosed\n  enabled: true\n"),
                       ("unknown key", "cache:\n  enabeld: false\n"),
                       ("wrong type", "cache:\n  enabled: maybe\n"),
                       ("negative size", "cache:\n  l3_code:\n    max_size_mb: -3\n"),
                       ("not a mapping", "- cache\n- enabled\n"),
                       # YAML 1.2 makes a repeated key an error; readers disagree on which
                       # value wins (yaml-cpp the first, PyYAML the last)
                       ("a key given twice", "cache:\n  enabled: false\n  enabled: false\n"),
                       ("a section given twice",
                        "cache:\n  enabled: false\ncache:\n  enabled: false\n"),
                       ("a key written flat and nested",
                        "cache.enabled: false\ncache:\n  enabled: false\n")):
        def one(what=what, text=text):
            write(ctx.config, text)
            for flags in ((), ("-Werror",)):
                proc, out = ctx.compile(src, *flags, rc=None)
                check_eq(proc.returncode, 0, "%s %s: exit status (%r)" % (what, flags, proc.stderr))
                check_eq(proc.stderr.count("[ConfigIgnored]"), 1,
                         "%s %s: [ConfigIgnored] warnings (%r)" % (what, flags, proc.stderr))
                same_outputs(outputs(out), ref, what)
            check(len(ctx.entries("l3")) == 1, "%s: the cache is not used with the defaults" % what)
            # `config get` prints the value in effect (the default), with the same warning,
            # and names the file.
            proc = ctx.run("config", "get", "cache.enabled")
            check_eq(proc.stdout, "true\n", "%s: config get" % what)
            check("[ConfigIgnored]" in proc.stderr and ctx.config in proc.stderr,
                  "%s: config get warning (%r)" % (what, proc.stderr))
        soft(what, one)
    soft.done()


# ---- 15. CUDA ------------------------------------------------------------------------------------


def test_nvcc_named_without_a_slash_is_looked_up_on_path(ctx):
    """`--nvcc NAME` and `TRITONC_NVCC=NAME` without a slash are looked up on PATH, as a shell
    and execvp do (audit 59: the name was taken relative to the current directory, so
    `--nvcc nvcc` wrote no library, only the note); a directory is no nvcc (it was run, and
    the compile failed with exit 3 where a missing one is a note)."""
    src = example("mnist_mlp")
    nvcc, nvcc_runs = ctx.fake_nvcc(name="nvcc-on-path")
    env = {"PATH": os.path.dirname(nvcc) + os.pathsep + os.environ.get("PATH", "")}
    for how, extra in ((("--nvcc", "nvcc-on-path"), {}), ((), {"TRITONC_NVCC": "nvcc-on-path"})):
        n = runs(nvcc_runs)
        proc, out = ctx.compile(src, "--target", "cuda", "--no-cache", *how,
                                env=dict(env, **extra))
        check_eq(runs(nvcc_runs), n + 1, "fake nvcc runs with %r" % ((how or extra),))
        check("[CudaNotCompiled]" not in proc.stderr, "note despite nvcc: %r" % proc.stderr)
        so = outputs(out)["so"]
        check(so is not None and so.startswith(b"\x7fELF fake"), "no library from %r" % ((how or extra),))
    proc, out = ctx.compile(src, "--target", "cuda", "--no-cache", "--nvcc", ctx.fresh_dir())
    check("[CudaNotCompiled]" in proc.stderr, "no note for a directory as nvcc: %r" % proc.stderr)
    check(outputs(out)["so"] is None, "a library from a directory as nvcc")


def test_cuda_library_comes_from_cache(ctx):
    src = example("mnist_mlp")
    nvcc, nvcc_runs = ctx.fake_nvcc()
    flags = ("--target", "cuda", "--nvcc", nvcc)
    proc, out1, d = compile_counted(ctx, src, *flags)
    expect_cuda(d, False, False, "first CUDA compile")
    check_eq(runs(nvcc_runs), 1, "fake nvcc runs after the first compile")
    first = outputs(out1)
    check(first["so"] is not None and first["so"].startswith(b"\x7fELF fake"),
          "no library from the fake nvcc")
    check(first["cu"] is not None and first["so"].endswith(first["cu"]),
          "the library was not built from the .cu written")
    check("[CudaNotCompiled]" not in proc.stderr, "note despite nvcc: %r" % proc.stderr)
    args = open(nvcc_runs).read()
    check("-shared" in args and " -o " in args, "fake nvcc got %r" % args)
    proc, out2, d = compile_counted(ctx, src, *flags)
    expect_cuda(d, True, True, "second CUDA compile")
    check_eq(runs(nvcc_runs), 1, "fake nvcc runs after the hit")
    same_outputs(outputs(out2), first, "CUDA hit")
    leftovers = [f for f in os.listdir(os.path.dirname(out2)) if ".tmp." in f or f.endswith(".log")]
    check_eq(leftovers, [], "temporary files next to the outputs")
    # a stale library next to the module is replaced by the cached one
    so = os.path.join(os.path.dirname(out2), "mnist_mlp_kernels.so")
    write(so, b"stale")
    ctx.compile(src, *flags, out=out2)
    same_outputs(outputs(out2), first, "CUDA hit over a stale library")
    # the same nvcc through $TRITONC_NVCC: same identity, a hit
    _, out, d = compile_counted(ctx, src, "--target", "cuda", env={"TRITONC_NVCC": nvcc})
    expect_cuda(d, True, True, "$TRITONC_NVCC naming the same nvcc")
    same_outputs(outputs(out), first, "$TRITONC_NVCC")
    # the variables nvcc reads extra flags from change the library: other keys (a hit built
    # a library without the architecture NVCC_APPEND_FLAGS asked for)
    for variable in ("NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS"):
        env = {variable: "-gencode arch=compute_75,code=sm_75"}
        n = runs(nvcc_runs)
        _, out, d = compile_counted(ctx, src, *flags, env=env)
        expect_cuda(d, False, False, variable)
        check_eq(runs(nvcc_runs), n + 1, "fake nvcc runs with " + variable)
        _, out, d = compile_counted(ctx, src, *flags, env=env)
        expect_cuda(d, True, True, variable + " again")
    # another nvcc (changed file): a miss, nvcc runs again
    time.sleep(0.01)
    with open(nvcc, "a") as f:
        f.write("# changed\n")
    n = runs(nvcc_runs)
    _, out, d = compile_counted(ctx, src, *flags)
    expect_cuda(d, False, False, "changed nvcc")
    check_eq(runs(nvcc_runs), n + 1, "fake nvcc runs after it changed")
    same_outputs(outputs(out), first, "changed nvcc")
    # the host compiler nvcc takes from PATH (gcc, g++): another one is another key (a hit
    # served a library built by the previous gcc: stop 39 cache audit)
    other_gcc = ctx.path("othergcc", "gcc")
    write(other_gcc, "#!/bin/sh\nexec /usr/bin/gcc \"$@\"\n")
    os.chmod(other_gcc, 0o755)
    env = {"PATH": os.path.dirname(other_gcc) + os.pathsep + os.environ.get("PATH", "")}
    n = runs(nvcc_runs)
    _, out, d = compile_counted(ctx, src, *flags, env=env)
    expect_cuda(d, False, False, "another gcc on PATH")
    check_eq(runs(nvcc_runs), n + 1, "fake nvcc runs with another gcc on PATH")
    _, out, d = compile_counted(ctx, src, *flags, env=env)
    expect_cuda(d, True, True, "another gcc on PATH, again")
    # --target all is --target cuda (the same outputs, the same key: nvcc does not run)
    n = runs(nvcc_runs)
    _, out, d = compile_counted(ctx, src, *(flags + ("--target", "all")))
    expect_cuda(d, True, True, "--target all after --target cuda")
    check_eq(runs(nvcc_runs), n, "fake nvcc runs for --target all")
    same_outputs(outputs(out), first, "--target all")
    # --cuda-dtypes is another key
    for extra in (("--cuda-dtypes", "f32"),):
        _, out, d = compile_counted(ctx, src, *(flags + extra))
        expect_cuda(d, False, False, " ".join(extra))
        n = runs(nvcc_runs)
        _, out2, d = compile_counted(ctx, src, *(flags + extra))
        expect_cuda(d, True, True, " ".join(extra) + " again")
        check_eq(runs(nvcc_runs), n, "fake nvcc runs on the hit of " + " ".join(extra))
        same_outputs(outputs(out2), outputs(out), " ".join(extra))

    # The library is keyed by the .cu it is built from: another -O level, a comment edit or
    # a copy of the file under another name emits the same kernels, and nvcc does not run
    # again (it takes seconds to minutes a model); the generated code is a miss.
    # (-O1's kernels have no fused ReLU: -O2 builds a library of its own.)
    n = runs(nvcc_runs)
    _, out, d = compile_counted(ctx, src, *(flags + ("-O2",)))
    expect_cuda(d, False, False, "-O2")
    check_eq(runs(nvcc_runs), n + 1, "fake nvcc runs for -O2")
    edited = ctx.path("src", "edited_mlp.tri")
    write(edited, open(src).read() + "# a comment\n")
    for what, source, extra in (("-Os", src, ("-Os",)),
                                ("a comment edit under another name", edited, ("-O2",))):
        n = runs(nvcc_runs)
        _, out, d = compile_counted(ctx, source, *(flags + extra))
        expect_cuda(d, False, True, what)
        check_eq(runs(nvcc_runs), n, "fake nvcc runs for " + what)
        # (The fake library is a line + the .cu it was built from: the kernels below the
        # .cu's header comment are this compile's.)
        got = outputs(out)
        kernels = got["cu"].partition(b"\n\n")[2]
        check(got["so"] is not None and kernels and
              got["so"].partition(b"\n\n")[2] == kernels,
              "the library for %s was built from other kernels than its .cu's" % what)
    # another architecture list is another library
    n = runs(nvcc_runs)
    _, out, d = compile_counted(ctx, src, *(flags + ("-O2", "--cuda-arch", "80")))
    expect_cuda(d, False, False, "-O2 --cuda-arch 80")
    check_eq(runs(nvcc_runs), n + 1, "fake nvcc runs for --cuda-arch 80")
    # without nvcc: the note on the miss and on the hit
    for hit in (False, True):
        proc, out, d = compile_counted(ctx, src, "--target", "cuda", "--nvcc", MISSING_NVCC)
        expect_l3(d, hit, "--nvcc missing")
        check_eq(proc.stderr.count("[CudaNotCompiled]"), 1,
                 "[CudaNotCompiled] notes (%s): %r" % ("hit" if hit else "miss", proc.stderr))
        got = outputs(out)
        check(got["so"] is None, "a library without nvcc")
        same_outputs(got, ctx.reference(src, "--target", "cuda", "--nvcc", MISSING_NVCC),
                     "--nvcc missing")

    # a failing nvcc: exit 3, nothing written, nothing cached; it runs again next time
    bad, bad_runs = ctx.fake_nvcc("nvcc-fails", mode="fail")
    l3_before = ctx.entries("l3")
    for attempt in (1, 2):
        proc, out = ctx.compile(src, "--target", "cuda", "--nvcc", bad, rc=3)
        check("[NvccFailed]" in proc.stderr, "failing nvcc: %r" % proc.stderr)
        check_eq(os.listdir(os.path.dirname(out)), [], "files written when nvcc failed")
        check_eq(runs(bad_runs), attempt, "failing nvcc runs")
    check_eq(ctx.entries("l3"), l3_before, "L3 entries stored for a failed nvcc")


# ---- 16. outputs on a hit ------------------------------------------------------------------------


def test_outputs_on_hit(ctx):
    src = example("resnet18")
    flags = ("--target", "cuda", "--nvcc", MISSING_NVCC)
    ref = ctx.reference(src, *flags)
    _, out = ctx.compile(src, *flags)
    cu = os.path.join(os.path.dirname(out), "resnet18_kernels.cu")
    old = time.time() - 3 * 86400
    inodes = {}
    for p in (out, cu):
        os.utime(p, (old, old))
        inodes[p] = os.stat(p).st_ino
    _, _, d = compile_counted(ctx, src, *flags, out=out)
    expect_l3(d, True, "hit over identical outputs")
    for p in (out, cu):
        st = os.stat(p)
        check_eq(st.st_ino, inodes[p], "inode of %s (rewritten although identical)"
                 % os.path.basename(p))
        check(st.st_mtime > time.time() - 600, "mtime of %s not refreshed" % os.path.basename(p))
    same_outputs(outputs(out), ref, "hit over identical outputs")
    # different contents (other size, same size) are replaced
    write(out, b"something else\n")
    data = bytearray(ref["cu"])
    data[len(data) // 2] ^= 1
    write(cu, bytes(data))
    _, _, d = compile_counted(ctx, src, *flags, out=out)
    expect_l3(d, True, "hit over different outputs")
    same_outputs(outputs(out), ref, "hit over different outputs")
    # a miss over an identical output also keeps it
    ino = os.stat(out).st_ino
    ctx.run("cache", "clear")
    _, _, d = compile_counted(ctx, src, *flags, out=out)
    expect_l3(d, False, "miss over identical outputs")
    check_eq(os.stat(out).st_ino, ino, "inode of the module after a miss over an identical one")
    same_outputs(outputs(out), ref, "miss over identical outputs")


def test_multi_file_compile(ctx):
    a = ctx.path("src", "a.tri")
    b = ctx.path("src", "b.tri")
    write(a, read(example("mnist_mlp")))
    write(b, read(example("mnist_mlp")))  # identical: the second reuses the first's IR (L1)
    c = example("resnet18")
    refs = {p: ctx.reference(p) for p in (a, b, c)}
    for run in (1, 2):
        outdir = ctx.fresh_dir()
        d = Delta(ctx)
        ctx.run("compile", a, b, c, "-o", outdir)
        d.done()
        for p in (a, b, c):
            same_bytes(read(os.path.join(outdir, stem(p) + ".py")), refs[p]["py"],
                       "run %d: %s" % (run, os.path.basename(p)))
        if run == 1:
            check(d.of("l1", "hits") >= 1, "no L1 hit for the identical second file")
        else:
            # the identical file's generated code is served by L1 (what the first read from L3)
            check_eq((d.of("l3", "hits") + d.of("l1", "hits"), d.of("l3", "misses")), (3, 0),
                     "run 2: (L3 + L1 hits, L3 misses)")
            check_eq((d.of("l2", "hits"), d.of("l2", "misses")), (0, 0), "run 2: L2 lookups")


def test_config_set_refuses_a_file_compiles_ignore(ctx):
    """`config set` into a file that compiles ignore (an unknown key, invalid YAML, another
    key's bad value) would change nothing that ever applies: it fails (exit 3), says why and
    what to do, and leaves the file as it was. A set that makes the file usable is fine."""
    soft = Soft()
    for what, text in (("unknown key", "cache: {enabled: false, bogus: 1}\n"),
                       ("unknown key, block style", "# mine\ncache:\n  bogus: 1\n"),
                       ("invalid YAML", "cache: [unclosed\n"),
                       ("another key's bad value", "cache:\n  enabled: maybe\n"),
                       ("not a mapping", "- cache\n")):
        def one(what=what, text=text):
            write(ctx.config, text)
            proc = ctx.run("config", "set", "cache.l3_code.ttl_days", "5", rc=3)
            check("cannot set cache.l3_code.ttl_days" in proc.stderr and ctx.config in proc.stderr
                  and "ignore" in proc.stderr and "edit" in proc.stderr,
                  "%s: the error does not say why and what to do: %r" % (what, proc.stderr))
            check_eq(read(ctx.config).decode(), text, "%s: the file after the refused set" % what)
            # config get warns as a compile does, and prints the value in effect
            for key, default in (("cache.l3_code.ttl_days", "30"), ("cache.enabled", "true")):
                proc = ctx.run("config", "get", key)
                check_eq(proc.stdout, default + "\n", "%s: config get %s" % (what, key))
                check("[ConfigIgnored]" in proc.stderr,
                      "%s: config get %s does not warn: %r" % (what, key, proc.stderr))
        soft(what, one)

    def fixing():
        # the bad value is the one being set: the file becomes usable
        write(ctx.config, "cache:\n  l3_code:\n    ttl_days: lots  # days\n")
        ctx.run("config", "set", "cache.l3_code.ttl_days", "5")
        check_eq(read(ctx.config).decode(), "cache:\n  l3_code:\n    ttl_days: 5  # days\n",
                 "the file after a set that fixes it")
        proc = ctx.run("config", "get", "cache.l3_code.ttl_days")
        check_eq((proc.stdout, proc.stderr), ("5\n", ""), "config get after the fixing set")
    soft("a set that fixes the file", fixing)
    soft.done()


def test_config_set_writes_through_a_symlink(ctx):
    """A symlinked config file (dotfiles) stays a symlink: `config set` writes its target, as
    `git config` does, atomically (temporary file + rename next to the target)."""
    real = ctx.path("dotfiles", "tritonc")
    os.makedirs(real)
    target = os.path.join(real, "config.yaml")
    write(target, "# shared settings\ncache:\n  enabled: true\n")
    links = ctx.path("links")
    os.makedirs(links)
    link = os.path.join(links, "config.yaml")
    os.symlink("../dotfiles/tritonc/config.yaml", link)  # relative to the link's directory
    chain = ctx.path("chain.yaml")
    os.symlink(link, chain)
    for config, days in ((link, "7"), (chain, "8")):
        ctx.run("config", "set", "cache.l3_code.ttl_days", days, env={"TRITONC_CONFIG": config})
        check(os.path.islink(link) and os.readlink(link) == "../dotfiles/tritonc/config.yaml",
              "config set through %s replaced the symlink %s" % (config, link))
        check(os.path.islink(chain), "config set replaced the symlink %s" % chain)
        check_eq(read(target).decode(), "# shared settings\ncache:\n  l3_code:\n"
                 "    ttl_days: %s\n  enabled: true\n" % days, "the target after a set through %s"
                 % config)
        check_eq(ctx.run("config", "get", "cache.l3_code.ttl_days",
                         env={"TRITONC_CONFIG": config}).stdout, days + "\n",
                 "config get through %s" % config)
    for d in (real, links, ctx.root):
        check_eq([f for f in os.listdir(d) if ".tmp." in f], [], "temporary files in %s" % d)
    # a dangling symlink: its target is created, the link stays
    dangling = ctx.path("dangling.yaml")
    os.symlink(os.path.join(real, "new.yaml"), dangling)
    ctx.run("config", "set", "cache.enabled", "false", env={"TRITONC_CONFIG": dangling})
    check(os.path.islink(dangling), "config set replaced a dangling symlink")
    check_eq(read(os.path.join(real, "new.yaml")).decode(), "cache:\n  enabled: false\n",
             "the file created through a dangling symlink")


def test_cache_dir_expands_home_and_variables(ctx):
    """cache.dir may be `~/x`, `$VAR/x` or `${VAR}/x` (expanded when read, as ccache does);
    a relative one is relative to the configuration file's directory, not the current one."""
    src = example("mnist_mlp")
    work = ctx.path("work")  # the current directory of the compiles
    os.makedirs(work)
    base = ctx.path("base")
    env = {"TRITONC_TEST_BASE": base}
    unset = ("TRITONC_CACHE_DIR",)
    soft = Soft()
    for written, want in (("~/c1", os.path.join(ctx.home, "c1")),
                          ("~", ctx.home),
                          ("$TRITONC_TEST_BASE/c2", os.path.join(base, "c2")),
                          ("${TRITONC_TEST_BASE}/c3/$TRITONC_TEST_BASE", base + "/c3/" + base),
                          ("price$/c4", os.path.join(ctx.root, "price$", "c4")),
                          ("rel/c5", os.path.join(ctx.root, "rel", "c5"))):
        def one(written=written, want=want):
            write(ctx.config, "cache:\n  dir: '%s'\n" % written)
            proc = ctx.run("config", "get", "cache.dir", env=env, unset=unset, cwd=work)
            check_eq((proc.stdout, proc.stderr), (want + "\n", ""), "config get of %r" % written)
            proc, _ = ctx.compile(src, env=env, unset=unset, cwd=work)
            check_eq(proc.stderr, "", "compile with cache.dir %r" % written)
            check_eq(len(ctx.entries("l3", want)), 1, "L3 entries in %s (cache.dir %r)"
                     % (want, written))
            check_eq(sorted(os.listdir(work)), [], "what the compile created in the current "
                     "directory with cache.dir %r" % written)
        soft(written, one)

    def set_keeps_spelling():
        ctx.run("config", "set", "cache.dir", "~/c6", env=env, unset=unset)
        check("dir: ~/c6" in read(ctx.config).decode(), "config set did not keep '~/c6': %r"
              % read(ctx.config))
        check_eq(ctx.run("config", "get", "cache.dir", unset=unset).stdout,
                 os.path.join(ctx.home, "c6") + "\n", "config get after config set ~/c6")
    soft("config set keeps the spelling", set_keeps_spelling)

    def errors():
        # what cannot be expanded: config set refuses it (exit 2), a compile ignores the file
        for bad in ("$TRITONC_TEST_UNSET/x", "${TRITONC_TEST_UNSET}", "~nobody/x", "${1x}/y",
                    "${TRITONC_TEST_BASE"):
            text = read(ctx.config)
            proc = ctx.run("config", "set", "cache.dir", bad, env=env, unset=unset, rc=2)
            check("[ConfigValueInvalid]" in proc.stderr, "set %r: %r" % (bad, proc.stderr))
            check_eq(read(ctx.config), text, "the file after a refused set of %r" % bad)
            write(ctx.config, "cache:\n  dir: '%s'\n" % bad)
            proc, _ = ctx.compile(src, env=env, unset=unset, cwd=work)
            check_eq(proc.stderr.count("[ConfigIgnored]"), 1, "compile with cache.dir %r: %r"
                     % (bad, proc.stderr))
            check_eq(sorted(os.listdir(work)), [], "created in the current directory (%r)" % bad)
            write(ctx.config, text)
    soft("unexpandable values", errors)
    soft.done()


def test_huge_numbers_in_the_config_mean_no_limit(ctx):
    """A limit too big for the arithmetic saturates: huge ttl_days never expires anything
    (it wrapped around and evicted entries seconds old), a huge max_size_mb is a huge limit
    (2^44 MiB wrapped to 0, "none"; bigger ones to small limits)."""
    src = example("mnist_mlp")
    ctx.compile(src)
    entries = ctx.entries("l2") + ctx.entries("l3")
    check_eq(len(entries), 2, "entries after one compile")
    huge = "9" * 40
    # 10^13 and 127533 days wrapped to a cutoff after now: everything was evicted
    for days, shown in (("10000000000000", "10000000000000"), ("127533", "127533"),
                        ("99999999999999", "99999999999999"), ("106752", "106752"),
                        ("999999999999999999", "999999999999999999"),
                        (huge, str(2 ** 64 - 1))):
        ctx.run("config", "set", "cache.l3_code.ttl_days", days)
        check_eq(ctx.run("config", "get", "cache.l3_code.ttl_days").stdout, shown + "\n",
                 "config get of ttl_days %s" % days)
        proc = ctx.run("cache", "prune")
        check(proc.stdout.startswith("pruned 0 entries"), "prune with ttl_days %s: %r"
              % (days, proc.stdout))
        check_eq(ctx.entries("l2") + ctx.entries("l3"), entries, "entries after prune with "
                 "ttl_days %s" % days)
    proc = ctx.run("cache", "prune", "--days", "999999")
    check(proc.stdout.startswith("pruned 0 entries"), "prune --days 999999: %r" % proc.stdout)
    for mb in ("17592186044416", "17592186044417", huge):
        ctx.run("config", "set", "cache.l3_code.max_size_mb", mb)
        ctx.run("config", "set", "cache.l2_ir.max_size_mb", mb)
        s = ctx.stats()
        check_eq((s["levels"]["l2"]["limit_bytes"], s["levels"]["l3"]["limit_bytes"]),
                 (2 ** 64 - 1, 2 ** 64 - 1), "limits with max_size_mb %s" % mb)
        _, _, d = compile_counted(ctx, example("resnet18"))
        check_eq((d.of("l2", "evicted"), d.of("l3", "evicted")), (0, 0),
                 "evictions under max_size_mb %s" % mb)


def test_config_that_is_not_a_regular_file(ctx):
    """Only a regular file is read as the configuration: a FIFO (which made every command
    wait for a writer forever), a directory or a device is ignored by compiles with a
    warning, and is an error for `config get` and `config set`. /dev/null is empty."""
    src = example("mnist_mlp")
    ref = ctx.reference(src)
    fifo = ctx.path("fifo.yaml")
    os.mkfifo(fifo)
    folder = ctx.path("folder.yaml")
    os.makedirs(folder)
    soft = Soft()
    for what, path in (("a FIFO", fifo), ("a directory", folder)):
        def one(what=what, path=path):
            env = {"TRITONC_CONFIG": path}
            proc, out = ctx.compile(src, env=env, rc=None, timeout=20)
            check_eq(proc.returncode, 0, "%s: compile exit status (%r)" % (what, proc.stderr))
            check_eq(proc.stderr.count("[ConfigIgnored]"), 1, "%s: compile warnings (%r)"
                     % (what, proc.stderr))
            same_outputs(outputs(out), ref, what)
            ctx.run("cache", "stats", env=env, timeout=20)
            for args in (("get", "cache.enabled"), ("get", "cache.l3_code.ttl_days"),
                         ("set", "cache.enabled", "false")):
                proc = ctx.run("config", *args, env=env, rc=3, timeout=20)
                check(path in proc.stderr and "regular file" in proc.stderr,
                      "%s: config %s: %r" % (what, " ".join(args), proc.stderr))
            check(os.path.exists(path) and not os.path.isfile(path),
                  "%s: replaced by a file" % what)
        soft(what, one)

    def dev_null():
        env = {"TRITONC_CONFIG": "/dev/null"}
        proc, out = ctx.compile(src, env=env)
        check_eq(proc.stderr, "", "compile with /dev/null as the configuration")
        proc = ctx.run("config", "get", "cache.l3_code.ttl_days", env=env)
        check_eq((proc.stdout, proc.stderr), ("30\n", ""), "config get with /dev/null")
        proc = ctx.run("config", "set", "cache.enabled", "false", env=env, rc=3)
        check("/dev/null" in proc.stderr, "config set into /dev/null: %r" % proc.stderr)
    soft("/dev/null", dev_null)
    soft.done()


def test_verbose_names_the_level_and_corrupt_entries(ctx):
    """--verbose names the level that served a lookup as `cache stats` counts it (an entry
    this process has already read is an L1 hit), and says when an entry was corrupt."""
    work = ctx.path("src")
    text = open(example("mnist_mlp")).read()
    a, b = os.path.join(work, "a.tri"), os.path.join(work, "b.tri")
    write(a, text)
    write(b, text)  # the same source: the same L3 key
    out = ctx.fresh_dir()
    delta = Delta(ctx)
    proc = ctx.run("compile", a, b, "-o", out, "-j", "1", "--verbose")
    delta.done()
    lines = [l for l in proc.stderr.splitlines() if "cache: L" in l]
    check(any("L3 miss for %s" % a in l for l in lines), "no L3 miss for a.tri: %r" % lines)
    # b.tri's checked IR is the one a.tri stored moments before: found in memory (its L3
    # entry is stored after both files are compiled)
    l1 = [l for l in lines if "b.tri" in l and " hit " in l]
    check_eq(len(l1), 1, "hits logged for b.tri (%r)" % lines)
    check("L1 hit (L2 entry)" in l1[0], "b.tri, found in memory, is logged as %r" % l1[0])
    check_eq((delta.of("l1", "hits"), delta.of("l2", "hits"), delta.of("l3", "hits")), (1, 0, 0),
             "(L1, L2, L3) hits counted")
    # a corrupt L3 entry: said, with what was wrong
    entry = ctx.entries("l3")[0]
    flip(entry, -1)
    proc, _ = ctx.compile(a, "--verbose")
    check("L3 corrupt entry discarded" in proc.stderr and "checksum mismatch" in proc.stderr,
          "a corrupt entry is not reported as one: %r" % proc.stderr)
    proc, _ = ctx.compile(a, "--verbose")
    check("L3 hit for" in proc.stderr, "the rewritten entry is not a hit: %r" % proc.stderr)


def test_stats_total_counts_each_lookup_once(ctx):
    """The total hit rate counts each lookup once (an L1 miss goes on to L2/L3, which count
    it), and the total time saved is the sum of the rows as printed."""
    os.makedirs(ctx.cache)
    # The counters of the audit: 640 L3 lookups (533 hits) in processes whose 640 L1
    # lookups all missed; 0.4 ms saved by each of L2 and L3.
    write(os.path.join(ctx.cache, "stats"),
          "tritonc-cache-stats 1\nl1.hits 0\nl1.misses 640\nl2.hits 3\nl2.misses 104\n"
          "l2.saved_ns 400000\nl3.hits 533\nl3.misses 107\nl3.saved_ns 400000\n")
    s = ctx.stats()
    check_eq((s["levels"]["l3"]["hits"], s["levels"]["l1"]["misses"]), (533, 640),
             "the planted counters")
    total = s["total"]
    check_eq((total["hits"], total["misses"]), (536, 211), "total (hits, misses)")
    check_eq(total["hit_rate"], round(536 / 747, 4), "total hit rate")
    check_eq(total["time_saved_s"], 0.0008, "total time saved (JSON)")
    rows = {line.split()[0]: line for line in ctx.run("cache", "stats").stdout.splitlines()
            if line.split() and line.split()[0] in ("L1", "L2", "L3", "total")}
    check(rows["total"].endswith("71.8%        0     0.000 s"),
          "total row: %r (the rows' time saved is 0.000 s each)" % rows["total"])
    # one L1 hit: a lookup served from memory
    write(os.path.join(ctx.cache, "stats"),
          "tritonc-cache-stats 1\nl1.hits 1\nl1.misses 1\nl3.hits 0\nl3.misses 1\n"
          "l1.saved_ns 1400000\nl3.saved_ns 1400000\n")
    total = ctx.stats()["total"]
    check_eq((total["hits"], total["misses"], total["hit_rate"]), (1, 1, 0.5),
             "total with an L1 hit")
    text = ctx.run("cache", "stats").stdout
    check(re.search(r"^total .* 0\.002 s$", text, re.M) is not None,
          "total time saved is not 0.001 s + 0.001 s as printed: %r" % text)


# ---- audit 45A: what is the cache's, what is not --------------------------------------------


def test_maintenance_touches_only_the_caches_own_files(ctx):
    """clear, validate, prune and a compile's daily TTL sweep remove entries only: files named
    as entries (30 hex digits) in shards named as shards (two hex digits). A shard linked to a
    folder elsewhere once had that folder's files (a whole subdirectory too) removed by an
    ordinary compile, and a README in a folder of a level was removed as 'corrupt'."""
    src = example("mnist_mlp")
    ctx.compile(src)
    foreign = os.path.join(os.path.dirname(ctx.entries("l3")[0]), "notes.txt")
    write(foreign, "not an entry\n")
    victim = ctx.path("victim")
    os.makedirs(os.path.join(victim, "sub"))
    write(os.path.join(victim, "old_notes.txt"), "precious\n")
    old = time.time() - 60 * 86400
    os.utime(os.path.join(victim, "old_notes.txt"), (old, old))
    write(os.path.join(victim, "sub", "deep.txt"), "deep\n")
    shard = [d for d in ("ab", "cd", "ef") if not os.path.exists(os.path.join(ctx.cache, "l3", d))]
    os.symlink(victim, os.path.join(ctx.cache, "l3", shard[0]))
    docs = os.path.join(ctx.cache, "l3", "docs")
    os.makedirs(docs)
    write(os.path.join(docs, "README.txt"), "mine\n")
    # The daily TTL sweep of an ordinary compile, then every maintenance command.
    stats = os.path.join(ctx.cache, "stats")
    write(stats, re.sub(rb"(?m)^last_ttl_sweep .*$", b"last_ttl_sweep 0", read(stats)))
    write(ctx.config, "cache:\n  l3_code:\n    ttl_days: 1\n")
    ctx.compile(example("resnet18"))
    for command in (("cache", "validate"), ("cache", "prune", "--days", "0"),
                    ("cache", "clear")):
        ctx.run(*command)
    left = sorted(os.path.relpath(os.path.join(d, f), victim)
                  for d, _, files in os.walk(victim) for f in files)
    check_eq(left, ["old_notes.txt", "sub/deep.txt"], "files of the folder a shard links to")
    check(os.path.exists(os.path.join(docs, "README.txt")), "a README in a level was removed")
    check(os.path.exists(foreign), "a file not named as an entry was removed")
    check_eq(ctx.entries("l2"), [], "L2 entries after clear")


def test_stats_file_is_never_followed_or_waited_on(ctx):
    """`<cache>/stats` linked to a file elsewhere was rewritten by every compile (a planted
    link overwrote a user's file), linked to /dev/zero it aborted the compiler (bad_alloc),
    and as a FIFO `cache stats` waited forever. It is used only as a regular file."""
    src = example("mnist_mlp")
    ctx.compile(src)
    stats = os.path.join(ctx.cache, "stats")
    dotfile = ctx.path("dotfile")
    write(dotfile, "my precious dotfile\n")
    os.unlink(stats)
    os.symlink(dotfile, stats)
    ctx.compile(src, "-O2")
    check_eq(read(dotfile), b"my precious dotfile\n", "the file a linked stats names")
    os.unlink(stats)
    os.symlink("/dev/zero", stats)
    ctx.compile(src, "-O3", timeout=60)
    ctx.run("cache", "stats", timeout=60)
    os.unlink(stats)
    os.mkfifo(stats)
    ctx.run("cache", "stats", timeout=30)
    ctx.compile(src, "-Os", timeout=30)


def test_an_entry_bigger_than_its_header_says_is_not_read_whole(ctx):
    """An entry file grown to a terabyte (sparse) was read whole before its header was
    checked: every compile of that source failed with 'out of memory' and validate could not
    remove it. It is corrupt ("trailing bytes"), discarded and recompiled at once."""
    src = example("mnist_mlp")
    ctx.compile(src)
    [entry] = ctx.entries("l3")
    os.truncate(entry, 1 << 40)
    start = time.monotonic()
    proc, out = ctx.compile(src, "--verbose", timeout=60)
    check("corrupt entry discarded" in proc.stderr and "trailing bytes" in proc.stderr,
          "--verbose of the compile: %r" % proc.stderr)
    check(time.monotonic() - start < 30, "the compile read the terabyte")
    same_outputs(outputs(out), ctx.reference(src), "after the grown entry")
    check(os.path.getsize(entry) < 1 << 20, "the grown entry was not replaced")
    os.truncate(entry, 1 << 40)
    checked, valid, corrupt, lines = ctx.validate()
    check_eq(corrupt, 1, "corrupt entries validate found")
    check("trailing bytes" in lines[0], "validate says %r" % lines[0])


def test_prune_days_0_removes_entries_dated_in_the_future(ctx):
    """An entry last used in the future (a cache copied from a machine whose clock was ahead)
    survived `prune --days 0` ("all") and every TTL sweep."""
    ctx.compile(example("mnist_mlp"))
    ctx.compile(example("resnet18"))
    future = time.time() + 2 * 365 * 86400
    for entry in ctx.entries("l3"):
        os.utime(entry, (future, future))
    proc = ctx.run("cache", "prune", "--days", "0")
    check(proc.stdout.endswith("0 entries (0 B) left\n"), "prune --days 0 says %r" % proc.stdout)
    check_eq(ctx.entries("l2") + ctx.entries("l3"), [], "entries after prune --days 0")
    # A TTL of a year takes an entry dated two years ahead too.
    ctx.compile(example("mnist_mlp"))
    for entry in ctx.entries("l3"):
        os.utime(entry, (future, future))
    ctx.run("cache", "prune", "--days", "365")
    check_eq(ctx.entries("l3"), [], "entries dated two years ahead after prune --days 365")


def test_stats_of_a_cache_path_that_cannot_be_accessed(ctx):
    """`cache stats` on a loop of links reported an empty, enabled cache (exit 0) while
    compile and the other cache commands exit 3: only a path that does not exist is an empty
    cache."""
    a, b = ctx.path("loop1"), ctx.path("loop2")
    os.symlink(b, a)
    os.symlink(a, b)
    for command in (("stats",), ("clear",), ("validate",), ("prune",)):
        proc = ctx.run("cache", *command, "--cache-dir", a, rc=3)
        check("Too many levels of symbolic links" in proc.stderr,
              "cache %s: %r" % (command[0], proc.stderr))
    ctx.run("cache", "stats", "--cache-dir", ctx.path("not-yet"))


TESTS = [
    test_second_compile_is_l3_hit,
    test_source_change_misses,
    test_opt_level_change_is_l2_hit,
    test_big_file_keeps_its_groups_checked_ir_in_l2,
    test_identical_source_elsewhere_hits,
    test_key_covers_output_flags_only,
    test_compiler_binary_is_in_key,
    test_corrupt_entries_are_recompiled,
    test_validate_removes_planted_corrupt_entries,
    test_concurrent_processes_share_one_cache,
    test_cache_removed_while_compiling,
    test_kill_during_large_write,
    test_signal_during_nvcc_stops_it_and_leaves_nothing,
    test_cache_dir_linked_to_a_folder_not_made_yet,
    test_unusable_cache_dir_is_an_environment_error,
    test_cache_write_failure_is_an_environment_error,
    test_maintenance_fails_when_it_cannot_remove,
    test_prune_by_age_and_size,
    test_prune_sizes_ttl_and_usage_errors,
    test_ttl_expires_an_entry_at_lookup,
    test_limits_evict_automatically,
    test_clear,
    test_warnings_replayed_on_hits,
    test_files_with_errors_are_never_cached,
    test_cache_disabled,
    test_debugging_flags_bypass_cache,
    test_config_get_set_and_errors,
    test_config_set_keeps_comments_and_layout,
    test_config_sets_in_parallel_keep_every_key,
    test_config_keys_written_half_flat,
    test_cache_dir_precedence,
    test_broken_config_is_ignored_with_a_warning,
    test_cuda_library_comes_from_cache,
    test_nvcc_named_without_a_slash_is_looked_up_on_path,
    test_outputs_on_hit,
    test_multi_file_compile,
    test_damaged_stats_file,
    test_config_set_refuses_a_file_compiles_ignore,
    test_config_set_writes_through_a_symlink,
    test_cache_dir_expands_home_and_variables,
    test_huge_numbers_in_the_config_mean_no_limit,
    test_config_that_is_not_a_regular_file,
    test_verbose_names_the_level_and_corrupt_entries,
    test_stats_total_counts_each_lookup_once,
    test_maintenance_touches_only_the_caches_own_files,
    test_stats_file_is_never_followed_or_waited_on,
    test_an_entry_bigger_than_its_header_says_is_not_read_whole,
    test_prune_days_0_removes_entries_dated_in_the_future,
    test_stats_of_a_cache_path_that_cannot_be_accessed,
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tritonc", default=os.path.join(REPO, "build", "tools", "tritonc",
                                                          "tritonc"))
    parser.add_argument("-k", default="", help="run only the tests whose name contains this")
    args = parser.parse_args()
    tritonc = os.path.abspath(args.tritonc)
    if not os.access(tritonc, os.X_OK):
        print("no tritonc at %s (build it, or pass --tritonc)" % tritonc)
        print("0 passed, 1 failed")
        return 1
    workdir = tempfile.mkdtemp(prefix="tritonc-cache-")
    passed = failed = 0
    start = time.monotonic()
    for test in TESTS:
        if args.k and args.k not in test.__name__:
            continue
        root = os.path.join(workdir, test.__name__)
        os.makedirs(root)
        ctx = Ctx(tritonc, root)
        t0 = time.monotonic()
        try:
            test(ctx)
            print("PASS %s (%.2f s)" % (test.__name__, time.monotonic() - t0))
            passed += 1
        except Exception:  # noqa: BLE001  (report every failure, keep going)
            print("FAIL %s (%.2f s)" % (test.__name__, time.monotonic() - t0))
            traceback.print_exc(file=sys.stdout)
            failed += 1
        for note in ctx.notes:
            print("  note: %s" % note)
        sys.stdout.flush()
        shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(workdir, ignore_errors=True)
    print("# %.1f s" % (time.monotonic() - start))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
