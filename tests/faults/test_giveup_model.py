"""The give-up bound run_faults.sh judges strict scenarios by
(tests/lib/fgtest/giveup.py): exact where it can be checked by hand, and
against a simulation of the sender's attempts under random loss."""
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from fgtest import giveup  # noqa: E402


def test_no_loss_allows_nothing():
    assert giveup.allowed(4200, 4200, 8400, 0.0, 0.0) == (0, 0.0)


def test_attempt_failure_by_hand():
    assert giveup.attempt_failure(0.05, 0.05, 2) == pytest.approx(1 - 0.95 ** 3)
    assert giveup.attempt_failure(0.0, 0.1, 5) == pytest.approx(0.1)


def test_poisson_tail():
    # P(X > 0) = 1 - e^-m < 1e-6 only for m < ~1e-6
    assert giveup.poisson_allowed(0.0) == 0
    assert giveup.poisson_allowed(5e-7) == 0
    assert giveup.poisson_allowed(2e-6) == 1
    # mean 1: P(X > 9) = 1.1e-7, P(X > 8) = 1.1e-6
    assert giveup.poisson_allowed(1.0) == 9
    with pytest.raises(ValueError):
        giveup.poisson_allowed(-1.0)


def test_loss5_figures():
    # a loss5 run's figures: 4,200 frames, 656 resends, 8,561 fragments, 5%
    # each way; up to three frames given up are what the loss explains
    k, mean = giveup.allowed(4200, 4200 + 656, 8561, 0.05, 0.05)
    assert mean == pytest.approx(4200 * (1 - 0.95 ** 3) ** 6)
    assert k == 3
    # at 1% the mean is 2.9e-6: one give-up is just explained, two are not;
    # at 0.5% none is
    assert giveup.allowed(4200, 4300, 8500, 0.01, 0.01)[0] == 1
    assert giveup.allowed(4200, 4300, 8500, 0.005, 0.005)[0] == 0


def test_bound_holds_against_a_simulation():
    # frames of two fragments, six attempts, each fragment and ACK lost with
    # p independently (the model's own assumptions): the two agree within
    # 20%, ten times the simulation's spread (3,220 give-ups: about 2%)
    rng = random.Random(7)
    p, frames, runs = 0.3, 2000, 20
    q = giveup.attempt_failure(p, p, 2)
    total = 0
    for _ in range(runs):
        for _ in range(frames):
            if all(rng.random() < p or rng.random() < p or rng.random() < p for _ in range(giveup.ATTEMPTS)):
                total += 1
    mean = frames * q ** giveup.ATTEMPTS
    got = total / runs
    assert got == pytest.approx(mean, rel=0.2)
