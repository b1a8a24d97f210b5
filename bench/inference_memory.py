#!/usr/bin/env python3
"""Peak memory of one inference pass of a generated model (buffer reuse, issue #4).

    /usr/bin/python3 bench/inference_memory.py [--model resnet50] [--batch 16] [--levels 1,2]

Compiles examples/<model>.tri at each level, then runs one warm-up and one timed forward
under torch.no_grad() in a fresh process per level (224x224 images), and prints the
process's peak resident memory and the forward time. At -O2 the generated forward releases
each intermediate tensor after its last use; at -O1 every one lives until `return`.
"""
import argparse
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = r"""
import resource, sys, time, torch
sys.path.insert(0, sys.argv[3])
import tritonrt
torch.set_num_threads(2)
m = tritonrt.load(sys.argv[1])
model = getattr(m, m.ENTRY)()
model.eval()
x = torch.rand(int(sys.argv[2]), 3, 224, 224)
with torch.no_grad():
    model(x)
    t = time.perf_counter()
    model(x)
    dt = time.perf_counter() - t
print("%.0f %.3f" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, dt))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tritonc", default=os.path.join(REPO, "build-release/tools/tritonc/tritonc"))
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch", default="16")
    parser.add_argument("--levels", default="1,2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        for level in args.levels.split(","):
            py = os.path.join(work, "%s_O%s.py" % (args.model, level))
            subprocess.run([args.tritonc, "compile", os.path.join(REPO, "examples", args.model + ".tri"),
                            "-O" + level, "-o", py], check=True)
            out = subprocess.run(["/usr/bin/python3", "-c", CHILD, py, args.batch,
                                  os.path.join(REPO, "runtime")],
                                 check=True, capture_output=True, text=True).stdout.split()
            print("%s -O%s batch %s: peak RSS %s MiB, forward %s s"
                  % (args.model, level, args.batch, out[0], out[1]))


if __name__ == "__main__":
    sys.exit(main())
