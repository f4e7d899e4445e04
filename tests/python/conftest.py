"""Fixtures of the Python front end's tests (run with PYTHONPATH=build/python; numpy on the CPU)."""
import numpy as np
import pytest

import tessera as ts


@pytest.fixture
def rng():
    return np.random.default_rng(20261204)


@pytest.fixture(autouse=True)
def no_global_check():
    """ts.check is process-wide: a test that sets it must not leak it into the next one."""
    ts.check = False
    yield
    ts.check = False

