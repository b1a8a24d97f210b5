"""The loop shared by the small end-to-end suites (test_reports.py, test_watch.py): each
test runs in a fresh temporary directory; PASS/FAIL lines with tracebacks, then the line
"N passed, N failed" that scripts/test.sh counts."""
import argparse
import os
import subprocess
import tempfile
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tritonc_env(work):
    """The environment a suite runs tritonc in: no TRITONC_* setting of the caller's, and a
    cache directory of the test's own under `work`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITONC_")}
    env["TRITONC_CACHE_DIR"] = os.path.join(work, "cache")
    return env


def run_tritonc(tritonc, args, env, cwd, expect=0):
    """Runs tritonc with `args` in `cwd`; raises unless it exits with `expect`."""
    proc = subprocess.run([tritonc] + list(args), capture_output=True, text=True, env=env,
                          cwd=cwd)
    if proc.returncode != expect:
        raise AssertionError("tritonc %s: exit %d (expected %d)\n%s"
                             % (" ".join(args), proc.returncode, expect, proc.stderr))
    return proc


def main(tests, setup):
    """Runs `tests`, each as test(*setup(tritonc, workdir)); returns the exit status."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tritonc", default=os.path.join(REPO, "build/tools/tritonc/tritonc"))
    parser.add_argument("-k", default="", help="run only tests whose name contains this")
    args = parser.parse_args()
    passed = failed = 0
    for test in tests:
        if args.k and args.k not in test.__name__:
            continue
        with tempfile.TemporaryDirectory() as work:
            try:
                test(*setup(os.path.abspath(args.tritonc), work))
                passed += 1
                print("PASS", test.__name__)
            except Exception:  # noqa: BLE001 - report and go on
                failed += 1
                print("FAIL", test.__name__)
                traceback.print_exc()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0
