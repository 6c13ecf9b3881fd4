"""The fp8 formats of kverify.semantics.values.narrow: every one of the 256 codes of e4m3 and
e5m2 decoded exactly, checked against torch's float8_e4m3fn / float8_e5m2 when torch is
installed, and independently of any table (the f16 upper byte for e5m2, the OFP8 formula
and the order of the codes for e4m3)."""
from fractions import Fraction

import numpy as np
import pytest

from kverify.semantics.values.narrow import FP8, fp8_fraction, fp8_to_f32, round_to, to_f32

CODES = np.arange(256)


def _bits(x):
    return np.asarray(x, np.float32).view(np.uint32)


@pytest.mark.parametrize("fmt,tname", [("e4m3", "float8_e4m3fn"), ("e5m2", "float8_e5m2")])
def test_all_codes_agree_with_torch(fmt, tname):
    torch = pytest.importorskip("torch")
    ref = torch.from_numpy(CODES.astype(np.uint8)).view(getattr(torch, tname)).float().numpy()
    got = fp8_to_f32(CODES, fmt)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    assert np.array_equal(_bits(got[ok]), _bits(ref[ok]))  # bit for bit: -0.0 and inf included


def test_e5m2_is_the_upper_byte_of_an_f16():
    half = (CODES.astype(np.uint16) << 8).view(np.float16).astype(np.float32)
    got = fp8_to_f32(CODES, "e5m2")
    assert np.array_equal(np.isnan(got), np.isnan(half))
    assert np.array_equal(_bits(got[~np.isnan(got)]), _bits(half[~np.isnan(half)]))
    assert got[0x7C] == np.inf and got[0xFC] == -np.inf and np.isnan(got[[0x7D, 0x7E, 0x7F, 0xFF]]).all()
    assert got[0x7B] == 57344.0 == FP8["e5m2"].max_finite


def _ofp8_e4m3(c):
    s, e, m = c >> 7, (c >> 3) & 15, c & 7
    if e == 15 and m == 7:
        return None
    v = Fraction(m, 8) * Fraction(1, 64) if e == 0 else (1 + Fraction(m, 8)) * Fraction(2) ** (e - 7)
    return -v if s else v


def test_e4m3_matches_the_ofp8_formula_and_has_no_infinity():
    got = fp8_to_f32(CODES, "e4m3")
    for c in range(256):
        want = _ofp8_e4m3(c)
        if want is None:
            assert np.isnan(got[c]) and fp8_fraction(c, "e4m3") is None, hex(c)
        else:
            assert Fraction(float(got[c])) == want == fp8_fraction(c, "e4m3"), hex(c)
    assert np.isnan(got).sum() == 2 and not np.isinf(got).any()
    assert got[0x7E] == 448.0 == FP8["e4m3"].max_finite and got[0xFE] == -448.0
    assert got[0x78] == 256.0  # exponent 15 is an ordinary exponent
    assert got[0x01] == 2.0 ** -9 and got[0x08] == 2.0 ** -6  # smallest subnormal, smallest normal


def test_codes_are_ordered_by_magnitude_and_the_sign_bit_negates():
    for fmt, last in (("e4m3", 0x7E), ("e5m2", 0x7B)):
        v = fp8_to_f32(CODES, fmt)
        assert (np.diff(v[:last + 1]) > 0).all(), fmt
        assert np.array_equal(_bits(v[128:128 + last + 1]), _bits(-v[:last + 1])), fmt
        assert _bits(v[0x80]) == 0x80000000  # -0.0


def test_to_f32_reads_each_operand_format():
    assert to_f32(0x3C00, "f16") == 1.0 and to_f32(0xC000, "bf16") == -2.0
    assert _bits(to_f32(0x3F801FFF, "tf32")) == 0x3F800000  # the 13 low mantissa bits are ignored
    assert to_f32(0x1_38, "e4m3") == 1.0  # only the low byte is the element
    assert to_f32(0x3C, "e5m2") == 1.0
    with pytest.raises(ValueError, match="no tensor-core operand format"):
        to_f32(0, "s8")


def test_round_to_f16_rounds_float64_once():
    # 1 + 2^-11 + 2^-40: through float32 it becomes the tie 1 + 2^-11 and rounds to even (1.0);
    # rounded once it is above the tie and goes up
    x = np.float64(1 + 2.0 ** -11 + 2.0 ** -40)
    assert int(round_to(x, "f16")) == 0x3C01
    assert int(round_to(np.float32(x), "f16")) == 0x3C00
    assert int(round_to(np.float32(1.00390625), "bf16")) == 0x3F80  # tie to even
