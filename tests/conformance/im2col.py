"""TMA im2col conformance cases: one ``cp.async.bulk.tensor.{3d,4d}...im2col`` load per case,
its destination bytes copied to ``out``, run on the interpreter and (bench/conformance.py
``gen --im2col`` / ``gpu`` / ``compare``) on an H200 and compared bit for bit.

Each case is a hand-written PTX kernel (ours) with the copy's byte count baked in, a launch
spec with an im2col tensor map (``"mode": "im2col"``), and the coordinates and im2col offsets
as kernel arguments. The cases cover 3d (NWC) and 4d (NHWC) maps, padding corners, positive
corners (a box smaller than the image), offsets up to the far border, a column that wraps into
the next image and runs past the last one, partial channels (the channel coordinate near C,
and negative), the 128B swizzle and the NaN fill.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_NP = {"float32": np.float32, "float16": np.float16}


@dataclass(frozen=True)
class Case:
    name: str
    dtype: str
    shape: tuple  # row-major: (N, W, C) or (N, H, W, C)
    lower: tuple  # row-major spatial: (W,) or (H, W)
    upper: tuple
    cpp: int
    ppc: int
    coords: tuple  # innermost first: (c, w, [h,] n)
    offsets: tuple  # innermost first: (w, [h])
    swizzle: str = "none"
    oob_fill: str = "zero"
    extra: dict = field(default_factory=dict)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.cpp * self.ppc * np.dtype(_NP[self.dtype]).itemsize

    def launch(self) -> dict:
        names = ["c", "w", "h", "n"] if self.rank == 4 else ["c", "w", "n"]
        onames = ["ow", "oh"] if self.rank == 4 else ["ow"]
        k = f"im2col{self.rank}d"
        args = {f"{k}_{a}": v for a, v in zip(names + onames, self.coords + self.offsets)}
        return {"kernel": k, "grid": [1, 1, 1], "block": [128, 1, 1], "args": args,
                "buffers": {"x": {"dtype": self.dtype, "shape": list(self.shape)},
                            f"{k}_out": {"dtype": "uint8", "shape": [self.nbytes]}},
                "tensormaps": {f"{k}_tmap": {"mode": "im2col", "dtype": self.dtype, "shape": list(self.shape),
                                        "lower_corner": list(self.lower), "upper_corner": list(self.upper),
                                        "channels_per_pixel": self.cpp, "pixels_per_column": self.ppc,
                                        "swizzle": self.swizzle, "oob_fill": self.oob_fill, "buffer": "x"}},
                "outputs": [f"{k}_out"]}

    def ptx(self) -> str:
        return kernel_ptx(self.rank, self.nbytes)

    def inputs(self, seed: int = 0) -> dict:
        rng = np.random.default_rng(seed)
        x = rng.standard_normal(self.shape).astype(_NP[self.dtype])
        return {"x": x, f"im2col{self.rank}d_out": np.zeros(self.nbytes, np.uint8)}


def kernel_ptx(rank: int, nbytes: int) -> str:
    """Thread 0 initializes an mbarrier, fences it, posts expect_tx(nbytes) and issues the load;
    every thread waits phase 0 and the block copies the ``nbytes`` destination bytes to out."""
    assert rank in (3, 4) and nbytes % 4 == 0
    coords = "{%r10, %r11, %r12, %r13}" if rank == 4 else "{%r10, %r11, %r13}"
    offs = "{%rs1, %rs2}" if rank == 4 else "{%rs1}"
    hparam = "\t.param .u32 im2col{r}d_h,\n".format(r=rank) if rank == 4 else ""
    hload = "\tld.param.u32 \t%r12, [im2col{r}d_h];\n".format(r=rank) if rank == 4 else ""
    ohparam = ",\n\t.param .u16 im2col{r}d_oh".format(r=rank) if rank == 4 else ""
    ohload = "\tld.param.u16 \t%rs2, [im2col{r}d_oh];\n".format(r=rank) if rank == 4 else ""
    return f""".version 8.0
.target sm_90a
.address_size 64

.visible .entry im2col{rank}d(
	.param .align 64 .b8 im2col{rank}d_tmap[128],
	.param .u64 im2col{rank}d_out,
	.param .u32 im2col{rank}d_c,
	.param .u32 im2col{rank}d_w,
{hparam}	.param .u32 im2col{rank}d_n,
	.param .u16 im2col{rank}d_ow{ohparam}
)
.maxntid 128, 1, 1
{{
	.reg .pred 	%p<4>;
	.reg .b16 	%rs<4>;
	.reg .b32 	%r<32>;
	.reg .b64 	%rd<16>;
	.shared .align 1024 .b8 dst[{nbytes}];
	.shared .align 8 .b64 bar;

	mov.b64 	%rd1, im2col{rank}d_tmap;
	cvta.param.u64 	%rd2, %rd1;
	ld.param.u64 	%rd3, [im2col{rank}d_out];
	cvta.to.global.u64 	%rd4, %rd3;
	ld.param.u32 	%r10, [im2col{rank}d_c];
	ld.param.u32 	%r11, [im2col{rank}d_w];
{hload}	ld.param.u32 	%r13, [im2col{rank}d_n];
	ld.param.u16 	%rs1, [im2col{rank}d_ow];
{ohload}	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, bar;
	mov.u32 	%r3, dst;
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L_wait;
	mbarrier.init.shared::cta.b64 	[%r2], 1;
	fence.mbarrier_init.release.cluster;
	mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r2], {nbytes};
	cp.async.bulk.tensor.{rank}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r3], [%rd2, {coords}], [%r2], {offs};
$L_wait:
	bar.sync 	0;
$L_try:
	mbarrier.try_wait.parity.shared::cta.b64 	%p2, [%r2], 0;
	@!%p2 bra 	$L_try;
	mov.u32 	%r4, %r1;
$L_copy:
	setp.ge.u32 	%p3, %r4, {nbytes // 4};
	@%p3 bra 	$L_done;
	shl.b32 	%r5, %r4, 2;
	add.s32 	%r6, %r3, %r5;
	ld.shared.u32 	%r7, [%r6];
	cvt.u64.u32 	%rd5, %r5;
	add.s64 	%rd6, %rd4, %rd5;
	st.global.u32 	[%rd6], %r7;
	add.s32 	%r4, %r4, 128;
	bra.uni 	$L_copy;
$L_done:
	ret;
}}
"""


def reference(case: Case, x: np.ndarray) -> np.ndarray:
    """The destination bytes by a direct reading of PTX ISA §5.5.4 (before any swizzle):
    pixel k of the column is pixel start + k of the bounding-box walk (W fastest, then H,
    then the next image), shifted by the offsets; out-of-tensor pixels and channels filled."""
    sp = case.rank - 2
    N, C = case.shape[0], case.shape[-1]
    dims = list(case.shape[1:-1])[::-1]  # spatial, innermost first
    lo = list(case.lower)[::-1]
    hi = [dims[i] - 1 + list(case.upper)[::-1][i] for i in range(sp)]
    box = []  # every (n, spatial...) of the walk, in order, from image 0
    c0, start, n0 = case.coords[0], list(case.coords[1:-1]), case.coords[-1]
    ext = [hi[i] - lo[i] + 1 for i in range(sp)]
    per_image = int(np.prod(ext))
    idx = n0 * per_image + sum((start[i] - lo[i]) * int(np.prod(ext[:i])) for i in range(sp))
    out = np.zeros((case.ppc, case.cpp), dtype=x.dtype)
    if case.oob_fill == "nan":  # the hardware's NaN payload (measured; the ISA leaves it open)
        from kverify.semantics.memory_model.tma import _NAN_BITS

        out.view(np.uint8).reshape(-1, x.dtype.itemsize)[:] = _NAN_BITS[x.dtype.itemsize]
    for k in range(case.ppc):
        p = idx + k
        n, rem = divmod(p, per_image)
        pos = []
        for i in range(sp):
            rem, r = divmod(rem, ext[i])
            pos.append(lo[i] + r + case.offsets[i])
        if not (0 <= n < N and all(0 <= pos[i] < dims[i] for i in range(sp))):
            continue
        for j in range(case.cpp):
            ch = c0 + j
            if 0 <= ch < C:
                out[k, j] = x[(n, *pos[::-1], ch)]
    return out


CASES = [
    # 4d NHWC, 3x3 conv with padding 1: the top-left tap from the first output pixel
    Case("nhwc_pad_tap00", "float32", (2, 5, 6, 8), (-1, -1), (-1, -1), 8, 32, (0, -1, -1, 0), (0, 0)),
    # the bottom-right tap of a column that starts mid-image and wraps into image 1
    Case("nhwc_pad_tap22_wrap", "float32", (2, 5, 6, 8), (-1, -1), (-1, -1), 8, 32, (0, 2, 1, 0), (2, 2)),
    # a column starting in the last image that runs past it (N out of bound)
    Case("nhwc_past_last_image", "float32", (2, 5, 6, 8), (-1, -1), (-1, -1), 8, 64, (0, 0, 2, 1), (1, 0)),
    # channels 8..15 of C = 12: the last four out of bound
    Case("nhwc_partial_channels", "float32", (1, 4, 4, 12), (0, 0), (-2, -2), 8, 8, (8, 0, 0, 0), (1, 1)),
    # positive corners: a box smaller than the image, offsets reaching the far border
    Case("nhwc_inner_box", "float32", (2, 6, 7, 4), (1, 2), (-2, -1), 4, 48, (0, 2, 1, 0), (3, 2)),
    # float16, 64 channels (128 bytes a pixel), the 128B swizzle
    Case("nhwc_f16_swizzle128", "float16", (1, 6, 6, 64), (-1, -1), (-1, -1), 64, 16, (0, -1, -1, 0), (2, 1),
         swizzle="128B"),
    # float32, the NaN fill of the padding
    Case("nhwc_nan_fill", "float32", (1, 4, 5, 4), (-2, -2), (0, 0), 4, 24, (0, -2, -2, 0), (0, 1), oob_fill="nan"),
    # float16, the NaN fill (16-bit elements; 8 channels = 16 bytes a pixel)
    Case("nhwc_f16_nan_fill", "float16", (1, 4, 5, 8), (-2, -2), (0, 0), 8, 24, (0, -2, -2, 0), (0, 1), oob_fill="nan"),
    # 3d NWC: padding 2, a 1-d filter of 3 taps, a column across three images
    Case("nwc_pad2_wrap", "float32", (3, 10, 4), (-2,), (0,), 4, 40, (0, -2, 0), (3,)),
    # 3d NWC: a negative channel coordinate (channels -4..-1 out of bound, 0..3 in)
    Case("nwc_negative_channel", "float32", (2, 8, 8), (0,), (-1,), 8, 16, (-4, 0, 0), (1,)),
]
