#!/usr/bin/env python3
"""`tritonc watch`, driven by a script that edits the file as a user's editor would.

    python3 tests/e2e/test_watch.py --tritonc build/tools/tritonc/tritonc

One watch process follows a model through: the first compile; a save in place; a save
with an error (diagnostics, the output left as it was); the fix; a delete and re-creation;
an editor-style save (write a temporary file, rename it over the original); Ctrl-C (exit 0).
Each step waits for the status line it causes and checks the output file. With
--incremental, an edit to one of two layers recompiles only it and writes what a full compile
writes. Ends with "N passed, N failed".
"""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import runner  # noqa: E402

MODEL = """layer Net(w: TernaryTensor<trit, [8, 4]>, x: Tensor<float32, [?, 8]>)
    -> Tensor<float32, [?, 4]> {
    return relu(x @ w)
}
"""


class Watch:
    def __init__(self, tritonc, work, *flags):
        env = runner.tritonc_env(work)
        self.proc = subprocess.Popen([tritonc, "watch", "model.tri", "-o", "out.py"] + list(flags),
                                     cwd=work, env=env, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text, timeout=10.0):
        """The stderr lines up to and including the first that contains `text`."""
        got = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            got.append(line)
            self.seen.append(line)
            if text in line:
                return got
        raise AssertionError("no %r within %.0f s; stderr so far:\n%s"
                             % (text, timeout, "\n".join(self.seen)))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=10)


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


def test_watch_follows_edits(tritonc, work):
    src = os.path.join(work, "model.tri")
    out = os.path.join(work, "out.py")
    write(src, MODEL)
    w = Watch(tritonc, work, "-O2")
    try:
        w.wait_for("compiled model.tri")
        w.wait_for("watching model.tri")
        check("class Net(" in read(out), "first compile: no class Net")

        write(src, MODEL.replace("Net", "Net2"))  # save in place
        w.wait_for("compiled model.tri")
        check("class Net2(" in read(out), "in-place save not compiled")

        write(src, MODEL.replace("relu(x @ w)", "relu(x @ w) + undefined_name"))
        lines = w.wait_for("did not compile")
        check(any("[UndefinedName]" in line for line in lines),
              "no diagnostic for the error:\n%s" % "\n".join(lines))
        check("class Net2(" in read(out), "a failed compile touched the output")

        write(src, MODEL.replace("Net", "Net3"))
        w.wait_for("compiled model.tri")
        check("class Net3(" in read(out), "the fix was not compiled")

        os.remove(src)
        w.wait_for("waiting for it to come back")
        write(src, MODEL.replace("Net", "Net4"))
        w.wait_for("compiled model.tri")
        check("class Net4(" in read(out), "the re-created file was not compiled")

        tmp = os.path.join(work, ".model.tri.swp")  # an editor's save: write, then rename
        write(tmp, MODEL.replace("Net", "Net5"))
        os.rename(tmp, src)
        w.wait_for("compiled model.tri")
        check("class Net5(" in read(out), "the renamed-over file was not compiled")

        write(os.path.join(work, "other.tri"), MODEL)  # another file: ignored
        time.sleep(0.3)
        check(w.lines.empty(), "a change to another file triggered a compile")
    finally:
        rc = w.stop()
    check(rc == 0, "Ctrl-C: exit %s" % rc)
    check(any("stopped" in line for line in w.seen + list(w.lines.queue)), "no 'stopped' line")


def test_watch_follows_imported_files(tritonc, work):
    os.makedirs(os.path.join(work, "lib"))
    lib = os.path.join(work, "lib", "blocks.tri")
    out = os.path.join(work, "out.py")
    write(lib, "fn act(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
               "    return relu(x)\n}\n")
    write(os.path.join(work, "model.tri"), 'import "lib/blocks.tri"\n' + MODEL.replace(
        "relu(x @ w)", "act(x @ w)"))
    w = Watch(tritonc, work)
    try:
        w.wait_for("watching model.tri")
        check("F.relu(" in read(out), "first compile: no relu")
        write(lib, read(lib).replace("relu(x)", "sigmoid(x)"))  # an edit in the imported file
        w.wait_for("compiled model.tri")
        check("torch.sigmoid(" in read(out), "the imported file's edit was not compiled:\n"
              + read(out))
        write(os.path.join(work, "lib", "unrelated.tri"), MODEL)  # not imported: ignored
        time.sleep(0.3)
        check(w.lines.empty(), "a change to a file that is not imported triggered a compile")
    finally:
        rc = w.stop()
    check(rc == 0, "Ctrl-C: exit %s" % rc)


def test_watch_sees_every_spelling_links_and_new_imports(tritonc, work):
    """Audit 46G: (1) an import spelled through `..` gave the current directory a second
    spelling (`sub/..`), and saves of the watched file went unseen; (2) a watched file that
    is a symbolic link was never seen changing (only the link's directory was watched);
    (3) an import the compile could not find was not compiled once it was created."""
    act = "fn act(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n    return %s\n}\n"
    os.makedirs(os.path.join(work, "sub"))
    write(os.path.join(work, "lib.tri"), act % "relu(x)")
    write(os.path.join(work, "sub", "mid.tri"), 'import "../lib.tri"\n' +
          (act % "act(x) * 2.0").replace("fn act", "fn mid"))
    src = os.path.join(work, "model.tri")
    out = os.path.join(work, "out.py")
    write(src, 'import "sub/mid.tri"\n' + MODEL.replace("relu(x @ w)", "mid(x @ w)"))
    w = Watch(tritonc, work, "-O0")
    try:
        w.wait_for("watching model.tri")
        write(src, read(src).replace("mid(x @ w)", "mid(x @ w) + 1.0"))
        w.wait_for("compiled model.tri")
        check("+ 1.0" in read(out), "the save of model.tri was not compiled:\n" + read(out))
    finally:
        check(w.stop() == 0, "Ctrl-C")
    os.remove(src)
    os.makedirs(os.path.join(work, "real"))
    target = os.path.join(work, "real", "m.tri")
    write(target, MODEL)
    os.symlink(os.path.join("real", "m.tri"), src)
    w = Watch(tritonc, work)
    try:
        w.wait_for("watching model.tri")
        write(target, MODEL.replace("Net", "Linked"))
        w.wait_for("compiled model.tri")
        check("class Linked(" in read(out), "the link's target's save was not compiled")
    finally:
        check(w.stop() == 0, "Ctrl-C")
    os.remove(src)
    write(src, 'import "later.tri"\n' + MODEL.replace("relu(x @ w)", "act(x @ w)"))
    w = Watch(tritonc, work)
    try:
        w.wait_for("did not compile")
        write(os.path.join(work, "later.tri"), act % "sigmoid(x)")
        w.wait_for("compiled model.tri")
        check("torch.sigmoid(" in read(out), "the created import was not compiled")
    finally:
        check(w.stop() == 0, "Ctrl-C")
    # ... also in an -I folder, and in a folder made after the failed compile (review 46I).
    os.makedirs(os.path.join(work, "inc"))
    write(src, 'import "inclib.tri"\nimport "made/deep.tri"\n' +
          MODEL.replace("relu(x @ w)", "act(deep(x @ w))"))
    w = Watch(tritonc, work, "-I", "inc")
    try:
        w.wait_for("did not compile")
        write(os.path.join(work, "inc", "inclib.tri"), act % "tanh(x)")
        w.wait_for("did not compile")  # made/deep.tri is still missing
        os.makedirs(os.path.join(work, "made"))
        time.sleep(0.3)
        write(os.path.join(work, "made", "deep.tri"), (act % "x * 3.0").replace("fn act", "fn deep"))
        w.wait_for("compiled model.tri")
        check("torch.tanh(" in read(out) and "3.0" in read(out), "not compiled:\n" + read(out))
    finally:
        check(w.stop() == 0, "Ctrl-C")


def test_watch_incremental(tritonc, work):
    # Two layers: an edit to one recompiles only it (--verbose says so), and the output is
    # what a full compile writes; an error and its fix go through as without the flag.
    src = os.path.join(work, "model.tri")
    out = os.path.join(work, "out.py")
    other = "\nlayer Other(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n" \
            "    return tanh(x)\n}\n"
    write(src, other + MODEL)
    w = Watch(tritonc, work, "-O2", "--incremental", "--verbose")
    try:
        lines = w.wait_for("watching model.tri")
        check(any("2 of 2 declaration(s) changed" in line for line in lines), "\n".join(lines))
        write(src, other.replace("tanh", "sigmoid") + MODEL)
        lines = w.wait_for("compiled model.tri")
        check(any("1 of 2 declaration(s) changed, 1 recompiled" in line for line in lines),
              "\n".join(lines))
        full = subprocess.run([tritonc, "compile", "model.tri", "-O2", "--no-cache", "-o",
                               "full.py"], cwd=work, capture_output=True, timeout=30)
        check(full.returncode == 0 and read(out) == read(os.path.join(work, "full.py")),
              "the incremental output differs from a full compile")
        write(src, other + MODEL.replace("relu(x @ w)", "relu(x @ w) + undefined_name"))
        lines = w.wait_for("did not compile")
        check(any("[UndefinedName]" in line for line in lines), "\n".join(lines))
        write(src, other + MODEL.replace("Net", "Net2"))
        w.wait_for("compiled model.tri")
        check("class Net2(" in read(out), "the fix was not compiled")
    finally:
        rc = w.stop()
    check(rc == 0, "Ctrl-C: exit %s" % rc)


def test_watch_waits_for_a_created_file_to_be_written(tritonc, work):
    # A file deleted and created again (`cp`, `cat > model.tri`, some editors) is complete
    # only when its writer closes it: watch compiles it then, once, and not at its creation
    # (empty) or half-written in between.
    src = os.path.join(work, "model.tri")
    out = os.path.join(work, "out.py")
    write(src, MODEL)
    w = Watch(tritonc, work, "-O2")
    try:
        w.wait_for("watching model.tri")
        os.remove(src)
        w.wait_for("waiting for it to come back")
        text = MODEL.replace("Net", "Net6")
        with open(src, "w") as f:
            f.write(text[:len(text) // 2])
            f.flush()
            time.sleep(0.4)  # far past watch's 30 ms between the events of one save
            f.write(text[len(text) // 2:])
        lines = w.wait_for("model.tri")
        check(any("compiled model.tri" in line for line in lines),
              "the first compile after the re-creation failed:\n%s" % "\n".join(lines))
        check("class Net6(" in read(out), "the written file was not what was compiled")
        time.sleep(0.3)
        check(w.lines.empty(), "more than one compile for one save: %s" % list(w.lines.queue))
    finally:
        rc = w.stop()
    check(rc == 0, "Ctrl-C: exit %s" % rc)


def test_watch_missing_file_is_a_usage_error(tritonc, work):
    proc = subprocess.run([tritonc, "watch", "absent.tri"], cwd=work, capture_output=True,
                          text=True, timeout=10)
    check(proc.returncode == 2, "exit %d" % proc.returncode)
    check("[CannotReadFile]" in proc.stderr, proc.stderr)


def test_watch_json_diagnostics_keep_stderr_json(tritonc, work):
    """With --diagnostics-format=json every line of watch's stderr is one JSON object with the
    diagnostics' keys: its status lines are notes (code WatchStatus), a save with an error is
    the error's object, and a missing file's error too. They were text lines mixed in."""
    keys = ["file", "line", "column", "severity", "code", "message", "notes"]
    write(os.path.join(work, "model.tri"), MODEL)
    w = Watch(tritonc, work, "--diagnostics-format=json")
    try:
        w.wait_for("watching")
        write(os.path.join(work, "model.tri"), MODEL.replace("return", "retrun", 1))
        w.wait_for("did not compile")
    finally:
        check(w.stop() == 0, "exit status after Ctrl-C")
    w.lines.put(None)
    lines = w.seen + [line for line in iter(w.lines.get, None)]
    objects = [json.loads(line) for line in lines]
    # (`related`, the places of notes that point elsewhere, follows when there are any.)
    check(all(list(o) in (keys, keys + ["related"]) for o in objects), "keys: %s" % lines)
    codes = [o["code"] for o in objects]
    check("WatchStatus" in codes and any(c not in ("WatchStatus",) for c in codes),
          "codes: %s" % codes)
    proc = subprocess.run([tritonc, "watch", "absent.tri", "--diagnostics-format=json"],
                          cwd=work, capture_output=True, text=True, timeout=10)
    check(proc.returncode == 2, "exit %d" % proc.returncode)
    check(json.loads(proc.stderr)["code"] == "CannotReadFile", proc.stderr)


def test_watch_ctrl_c_stops_a_compile_in_progress(tritonc, work):
    """Ctrl-C while a compile runs (here nvcc, which takes minutes for a real model) stops at
    once, as it stops `compile`: nvcc is killed, nothing of that compile is written, and the
    watch says "stopped" and exits 0. It used to finish the compile first."""
    write(os.path.join(work, "model.tri"), MODEL)
    nvcc = os.path.join(work, "nvcc")
    started = os.path.join(work, "nvcc-started")
    write(nvcc, "#!/bin/sh\ntouch '%s'\nsleep 60\n" % started)
    os.chmod(nvcc, 0o755)
    w = Watch(tritonc, work, "--target", "cuda", "--nvcc", nvcc)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(started) and time.monotonic() < deadline:
            time.sleep(0.05)
        check(os.path.exists(started), "the fake nvcc never ran")
        begin = time.monotonic()
        w.proc.send_signal(signal.SIGINT)
        rc = w.proc.wait(timeout=10)
        took = time.monotonic() - begin
    finally:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait()
    w.wait_for("stopped")
    check(rc == 0 and took < 5, "exit %s %.1f s after Ctrl-C" % (rc, took))
    left = sorted(f for f in os.listdir(work) if f not in ("model.tri", "nvcc", "nvcc-started",
                                                            "cache"))
    check(left == [], "files written by the interrupted compile: %s" % left)


TESTS = [test_watch_follows_edits, test_watch_follows_imported_files,
         test_watch_sees_every_spelling_links_and_new_imports, test_watch_incremental,
         test_watch_waits_for_a_created_file_to_be_written,
         test_watch_missing_file_is_a_usage_error, test_watch_json_diagnostics_keep_stderr_json,
         test_watch_ctrl_c_stops_a_compile_in_progress]


if __name__ == "__main__":
    sys.exit(runner.main(TESTS, lambda tritonc, work: (tritonc, work)))
