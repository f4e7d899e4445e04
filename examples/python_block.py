"""The Python front end on numpy: a traced RMSNorm + gating block, checked
against the oracle, its layers and its kernels. Run from the tree after a
build: PYTHONPATH=build/python python3 examples/python_block.py"""
import numpy as np

import tessera as ts


@ts.jit(check=True)  # every call is checked, kernel by kernel, as `tessera run --check`
def block(x, w, g):
    return ts.silu(ts.rms_norm(x, w, eps=1e-6) * g)


rng = np.random.default_rng(7)
x = rng.standard_normal((256, 1024), dtype=np.float32)
w = rng.standard_normal(1024, dtype=np.float32)
g = rng.standard_normal((256, 1024), dtype=np.float32)

y = block(x, w, g)  # numpy in, numpy out, no copies
print(block.lower("graph"))
print(block.explain(x, w, g))
print("".join(block.last_check["lines"]), end="")
print(f"result {type(y).__name__} {y.shape} {y.dtype}; the kernel read x in place:",
      block.last_pointers["inputs"][0] == x.ctypes.data)
