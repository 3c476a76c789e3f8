"""What the corpus test files (another library's tests re-expressed: test_autograd_corpus,
test_jax_corpus, test_tangent_corpus, test_pytorch_corpus) share: each case's outcome
computed once, and the outcome table printed when a corpus file runs as a script."""

import collections
import sys


class Outcomes:
    """``run_case(case) -> (status, message)``, computed once per case name."""

    def __init__(self, run_case, name=lambda case: case.name):
        self.run_case, self.name, self.found = run_case, name, {}

    def __call__(self, case):
        key = self.name(case)
        if key not in self.found:
            self.found[key] = self.run_case(case)
        return self.found[key]


def print_table(cases, run_case, name=lambda case: case.name, width=45):
    """The counts of OK / REFUSED / WRONG / CRASH and a line for each case not OK (every
    case with ``-v``); arguments other than flags select the cases whose names hold one."""
    counts = collections.Counter()
    words = [a for a in sys.argv[1:] if not a.startswith("-")]
    for case in cases:
        if words and not any(w in name(case) for w in words):
            continue
        status, message = run_case(case)
        counts[status] += 1
        if status != "OK" or "-v" in sys.argv:
            print(f"{status:8s} {name(case):{width}s} {message}", flush=True)
    print(dict(counts), "of", sum(counts.values()))
