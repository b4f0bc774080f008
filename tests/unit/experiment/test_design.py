"""The experiment's groups: a stable hash of seed and path, recorded groups winning."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from dsbra.errors import InputError
from dsbra.experiment.design import CONTROL, TREATMENT, Holdout

PATHS = [f"/warehouse/t/part-{i:05d}" for i in range(2000)]


def test_groups_are_a_function_of_seed_and_path_only():
    a = Holdout(0.5, seed=7).is_control(PATHS)
    b = Holdout(0.5, seed=7).is_control(list(reversed(PATHS)))[::-1]
    assert (a == b).all()
    # the documented hash, so another tool (or a later dsbra) can reproduce the split
    digest = hashlib.blake2b(f"7\0{PATHS[0]}".encode(), digest_size=8).digest()
    assert a[0] == (int.from_bytes(digest, "big") / 2.0**64 < 0.5)
    assert not (a == Holdout(0.5, seed=8).is_control(PATHS)).all()


def test_the_fraction_is_the_share_held_out():
    for fraction in (0.1, 0.5, 0.9):
        share = Holdout(fraction, seed=1).is_control(PATHS).mean()
        assert share == pytest.approx(fraction, abs=0.04)  # 2000 fixed paths, fixed seed


def test_a_larger_fraction_keeps_every_earlier_control_file():
    small, large = (Holdout(f, seed=3).is_control(PATHS) for f in (0.2, 0.4))
    assert (large | ~small).all()


def test_recorded_groups_win_while_enabled_and_none_are_held_when_off():
    h = Holdout(0.5, seed=0, assigned={PATHS[0]: CONTROL, PATHS[1]: TREATMENT})
    assert list(h.is_control(PATHS[:2])) == [True, False]
    off = Holdout(0.0, assigned={PATHS[0]: CONTROL})
    assert not off.enabled and not off.is_control(PATHS[:1]).any()
    assert Holdout(1.0).is_control(PATHS[:5]).all()
    assert Holdout(0.5).is_control([]).dtype == np.bool_


@pytest.mark.parametrize("fraction", [-0.1, 1.5])
def test_a_fraction_outside_0_1_is_refused(fraction):
    with pytest.raises(InputError, match="holdout fraction"):
        Holdout(fraction)
