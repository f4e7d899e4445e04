"""examples/train_mlp.py: the model trained with Tessera's gradients and in-place optimizer steps (SGD with
momentum, AdamW) follows the same model and optimizer written by hand in numpy, step by step, and learns."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import train_mlp  # noqa: E402


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_loss_curve_and_parameters_match_numpy(optimizer):
    curve, ref_curve, ours, ref = train_mlp.train(40, optimizer=optimizer)
    np.testing.assert_allclose(curve, ref_curve, rtol=1e-4)
    assert curve[-1] < 0.35 * curve[0]
    for p, r in zip(ours, ref):
        np.testing.assert_allclose(p, r, rtol=1e-4, atol=1e-5)
