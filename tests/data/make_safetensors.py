#!/usr/bin/env python3
"""Writes tests/data/reference.safetensors with the Python `safetensors` package (not with
tinygrad.hpp), so tests/test_nn.cpp can check that a file made by another tool loads.

    pip install safetensors numpy && python3 tests/data/make_safetensors.py

The values are fixed (no randomness); test_nn.cpp ("safe_load: a file written by the Python
safetensors package") hard-codes them, so keep the two in sync.
"""
import os

import numpy as np
from safetensors.numpy import save_file

tensors = {
    "f32": (np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1.0),  # [-1, -0.5, 0, 0.5, 1, 1.5]
    "f16": np.array([1.5, -2.0, 65504.0, 2.0**-10], dtype=np.float16),
    "f64_scalar": np.array(3.25, dtype=np.float64),                       # shape ()
    "i64": np.array([[-3, 0], [1 << 40, 7]], dtype=np.int64),
    "i32": np.array([-(2**31), 2**31 - 1, 42], dtype=np.int32),
    "u8": np.array([0, 255, 7], dtype=np.uint8),
    "i8": np.array([-128, 127, -1], dtype=np.int8),
    "flags": np.array([True, False, True], dtype=np.bool_),
    "empty": np.zeros((0, 4), dtype=np.float32),
    "layers.0.weight": np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32),
}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.safetensors")
save_file(tensors, out, metadata={"format": "np", "written_by": "make_safetensors.py"})
print(out, os.path.getsize(out), "bytes")
