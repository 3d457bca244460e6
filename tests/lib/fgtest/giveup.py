"""fgtest.giveup - how many frames the fleet's UDP sender may give up by
chance under a relay's independent random loss, so a fault test can tell a
give-up the loss explains from one the appliance caused.

The sender (wire.md 2.1, fanofleet's default) makes at most six attempts
per frame (the first send and five resends, each under a new frame_id, so a
fragment of one attempt never completes another) and retires a frame only
on an ACK. One attempt fails when any of its fragments is lost upward or
the ACK answering it is lost downward; a later ACK that covers the same
sequence only helps, so the model's attempt failure is an upper bound:

    q = 1 - (1 - p_up) ** fragments_per_attempt * (1 - p_down)

and a frame is given up with probability q ** attempts, independently per
frame. Over n frames the give-ups are then close to Poisson with mean
n * q ** attempts; `allowed` is the smallest k that more than k give-ups
exceed only with probability `tail` (1e-6): with no loss it is 0, at 5% loss
over 4,200 frames of two fragments (mean 0.035) it is 3, at 1% (mean
2.9e-6) 1.

Callers: the verdict of tests/faults/run_faults.sh; tests/faults/
test_giveup_model.py. Pure: no I/O."""
import math

ATTEMPTS = 6  # the fleet's sender: first send + 5 resends, then given up
TAIL = 1e-6


def attempt_failure(p_up, p_down, fragments_per_attempt):
    """probability that one attempt is not ACKed (upper bound, see above)."""
    return 1.0 - (1.0 - p_up) ** fragments_per_attempt * (1.0 - p_down)


def poisson_allowed(mean, tail=TAIL):
    """smallest k with P(X > k) < tail for X ~ Poisson(mean)."""
    if mean < 0 or not 0 < tail < 1:
        raise ValueError(f"mean {mean}, tail {tail}")
    k, term = 0, math.exp(-mean)
    cdf = term
    while 1.0 - cdf >= tail:
        k += 1
        term *= mean / k
        cdf += term
    return k


def allowed(frames, attempts_sent, fragments, p_up, p_down, attempts=ATTEMPTS, tail=TAIL):
    """(allowed give-ups, mean) for a run that sent `frames` frames in
    `attempts_sent` attempts (first sends + resends) of `fragments`
    datagrams in all, through independent loss p_up / p_down. Attempts are
    taken at the largest whole fragment count the run's average allows
    (ceil), which can only raise the bound's mean."""
    if frames <= 0 or attempts_sent <= 0:
        return 0, 0.0
    for p in (p_up, p_down):
        if not 0.0 <= p < 1.0:
            raise ValueError(f"loss {p} outside [0, 1)")
    per_attempt = math.ceil(fragments / attempts_sent)
    mean = frames * attempt_failure(p_up, p_down, per_attempt) ** attempts
    return poisson_allowed(mean, tail), mean
