"""fgtest.checks - how a Python test reports: "ok - what" for a check that
held, "FAIL: what" and exit 1 for one that did not (or collected, for tests
that report every failure before exiting), exit 77 to skip with a reason.
Callers: every Python test; main thread."""
import sys

SKIP = 77


def fail(msg):
    """Print FAIL and exit 1."""
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    """ok - msg, or fail(msg)."""
    if not cond:
        fail(msg)
    print("ok - " + msg, flush=True)


def skip(msg):
    """Print SKIP and exit 77."""
    print("SKIP: " + msg, flush=True)
    sys.exit(SKIP)


class Checks:
    """Checks that go on after a failure: c.check(cond, msg) returns cond;
    c.done() prints "N passed, M failed" and exits 1 if any failed."""

    def __init__(self, out=sys.stdout):
        self.passed, self.failed, self.out = 0, 0, out

    def check(self, cond, msg):
        if cond:
            self.passed += 1
            print("ok - " + msg, file=self.out, flush=True)
        else:
            self.failed += 1
            print("FAIL - " + msg, file=self.out, flush=True)
        return cond

    def fail(self, msg):
        return self.check(False, msg)

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        sys.exit(1 if self.failed else 0)
