# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's, and intrinsics are called with typing contexts)
"""Low-level building blocks for the compiled kernels: bit casts, prefetch, a vectorizable log.

Numba exposes neither a float/int bit cast nor a prefetch, and its ``math.log`` is a scalar libm
call that stops LLVM from vectorizing a loop. These few intrinsics fill the gap; they are free or
nearly free at the machine level.
"""

from __future__ import annotations

import numba as nb
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _bitcast(src, dst, doc: str):  # type: ignore[no-untyped-def]
    @intrinsic
    def cast(typingctx, x):  # type: ignore[no-untyped-def]
        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            return builder.bitcast(args[0], context.get_value_type(dst))

        return dst(src), codegen

    cast.__doc__ = doc
    return cast


f64_bits = _bitcast(types.float64, types.int64, "Reinterpret a float64 as an int64 (one LLVM bitcast).")
bits_f64 = _bitcast(types.int64, types.float64, "Reinterpret an int64 as a float64 (one LLVM bitcast).")
f32_bits = _bitcast(types.float32, types.int32, "Reinterpret a float32 as an int32 (one LLVM bitcast).")
bits_f32 = _bitcast(types.int32, types.float32, "Reinterpret an int32 as a float32 (one LLVM bitcast).")


def _unaligned_load(width: int):  # type: ignore[no-untyped-def]
    result = types.int64 if width == 64 else types.int32

    @intrinsic
    def load(typingctx, arr, idx):  # type: ignore[no-untyped-def]
        sig = result(arr, idx)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            aty = signature.args[0]
            ary = context.make_array(aty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aty, ary, [args[1]], wraparound=False, boundscheck=False)
            wide = builder.bitcast(ptr, ir.PointerType(ir.IntType(width)))
            return builder.load(wide, align=1)  # x86 is little-endian, as the file format

        return sig, codegen

    return load


load_le64 = _unaligned_load(64)
"""``load_le64(buf, i)``: the 8 bytes ``buf[i:i + 8]`` of a uint8 array as a little-endian int64
(one unaligned load; the caller checks ``i + 8 <= len(buf)``)."""
load_le32 = _unaligned_load(32)
"""``load_le32(buf, i)``: 4 bytes as a little-endian int32, as :data:`load_le64`."""


@intrinsic
def prefetch(typingctx, arr, idx):  # type: ignore[no-untyped-def]
    """Hint the CPU to fetch ``arr.flat[idx]`` into cache for writing (``llvm.prefetch``)."""
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        aty = signature.args[0]
        ary = context.make_array(aty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aty, ary, [args[1]], wraparound=False, boundscheck=False)
        i8p = ir.PointerType(ir.IntType(8))
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        # rw=1 (write), locality=3 (keep in all cache levels), cache type=1 (data)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


# Natural logarithm after fdlibm's e_log.c (Sun Microsystems, 1993): reduce x = 2**k * m with
# m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f), and log(1 + f) = 2 atanh(s) from a
# minimax polynomial in s**2. Error < 1 ulp for positive normal x (tested against math.log).
# Written without branches so LLVM vectorizes loops that call it.
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SQRT2 = 1.4142135623730951
_TWO52_PLUS_BIAS = 4503599627371519.0  # 2**52 + 1023


@nb.njit(inline="always", nogil=True, error_model="numpy")
def log_pos(x):  # type: ignore[no-untyped-def]
    """``log(x)`` for positive normal ``x`` (no NaN, zero, subnormal or infinity handling)."""
    b = f64_bits(x)
    m = bits_f64((b & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)  # mantissa in [1, 2)
    # exponent as a float through the 2**52 trick: int64 -> float64 conversion does not vectorize
    # on AVX2
    k = bits_f64(((b >> 52) & 0x7FF) | 0x4330000000000000) - _TWO52_PLUS_BIAS
    big = m > _SQRT2
    m = m * 0.5 if big else m
    k = k + 1.0 if big else k
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


