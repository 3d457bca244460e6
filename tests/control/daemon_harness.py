"""daemon_harness.py - the old import path of the daemon fixture, now
tests/lib/fgtest/harness.py (with the codec in fgtest.flow and check/fail in
fgtest.checks). Kept only for tests written against this path while it
moved (new hostile tests landing the same day); new tests import
fgtest.harness. Nothing is defined here."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import *  # noqa: E402,F401,F403
from fgtest.harness import _live, serve_main  # noqa: E402,F401
