#!/usr/bin/env python3
"""Fits the f32 GPU gelu's erf (device/gpu/tessera_tile.cuh, f_gelu).

erf(z) = sign(z) (1 - 2^q(t)), t = min(|z|, 4), q a degree-8 polynomial in t
fitted to log2(erfc(t)) by least squares weighted by erfc(t) (an error dq in q
is an error erfc(t) ln2 dq in erf). One branch-free path for every z: erff's
two polynomials cost a select per coefficient, and gelu needs erf only to an
absolute error of a few 2^-24 (gelu = x/2 (1 + erf)). Past t = 4, 1 - erfc
rounds to 1 in f32. Prints the coefficients (constant first, hex floats) and
the worst absolute error of the f32 evaluation over [0, 4], ex2 exact.

  python3 scripts/fit_gelu_erf.py
"""
from math import erfc, log2

import numpy as np
import numpy.polynomial.chebyshev as cheb

DEGREE, T = 8, 4.0


def fit():
    t = np.linspace(0.0, T, 20001)
    w = np.array([erfc(v) for v in t])
    q = np.array([log2(erfc(v)) for v in t])
    x = t / T * 2 - 1  # Chebyshev basis on [-1, 1] for a well-conditioned fit
    coef, *_ = np.linalg.lstsq(cheb.chebvander(x, DEGREE) * w[:, None], q * w, rcond=None)
    in_t = np.polynomial.Polynomial(cheb.cheb2poly(coef))(np.polynomial.Polynomial([-1.0, 2.0 / T]))
    return in_t.coef.astype(np.float32)


def worst_error(c):
    t = np.linspace(0.0, T, 200001).astype(np.float32)
    r = np.full_like(t, c[-1])
    for k in range(len(c) - 2, -1, -1):  # Horner with fma: one rounding a step
        r = (r.astype(np.float64) * t + np.float64(c[k])).astype(np.float32)
    erf = np.float32(1) - np.exp2(r.astype(np.float64)).astype(np.float32)
    exact = np.array([1 - erfc(float(v)) for v in t])
    return np.abs(erf.astype(np.float64) - exact).max()


if __name__ == "__main__":
    c = fit()
    print(", ".join(float(v).hex() + "f" for v in c))
    print(f"worst |erf error| on [0, {T}]: {worst_error(c):.3g} ({worst_error(c) / 2**-24:.2f} x 2^-24)")
