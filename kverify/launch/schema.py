"""The schema of a launch spec, checked before anything runs.

``check(d, path)`` walks the spec dict and raises ``KernelError`` at the first value of the
wrong type or shape, naming its key path (``launch spec: buffers.a.shape[1]: expected a
non-negative integer, got "abc"``). When the spec came from a JSON file, the error points at
the offending value's line and column in that file (``locate``); otherwise at line 1.

What it accepts (after template expressions are evaluated, ``resolve.instantiate``):

* ``kernel``: a string or null; ``grid``/``block``/``cluster``: 1 to 3 positive integers
  (or one integer), grid and block at most ``MAX_DIM`` each;
* ``args``: an object whose values are integers, floats, booleans, expression strings, or a
  by-value parameter: ``{"bytes": "<hex>"}`` or ``{"struct": {"<offset>": FIELD, ...}}``
  with FIELD one of ``{"u8".."u64"|"s8".."s64"|"f16"|"f32"|"f64": number}``,
  ``{"ptr": "<buffer>"}``, ``{"ptr": {"buffer": "<buffer>", "offset": int}}`` or
  ``{"tensormap": TENSORMAP}`` (offsets decimal, a tensor map's a multiple of 64, fields
  not overlapping);
* ``buffers``: ``{"dtype": str, "shape": [non-negative int, ...]}``, at most
  ``MAX_BUFFER_BYTES`` in all (dtypes are checked against the dtype table by ``spec``);
* ``tensormaps``: ``{"dtype", "shape", "box", "buffer", "swizzle", "strides",
  "elem_strides", "oob_fill", ...}`` (tile mode), or ``{"mode": "im2col", "dtype", "shape",
  "buffer", "lower_corner", "upper_corner", "channels_per_pixel", "pixels_per_column",
  "strides", "element_strides", "swizzle", "oob_fill"}`` (``cuTensorMapEncodeIm2col``);
* ``outputs``: a list of strings; ``dynamic_smem``/``shared_bytes``: a non-negative integer
  at most ``MAX_SMEM``; ``cooperative``: true or false (a cooperative launch; absent: assumed
  when the kernel reads cooperative groups' grid workspace).

Whether a by-value struct fits its parameter, and whether the buffers it names exist, is
checked when it is bound to the kernel (``params``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from kverify.semantics.ir import KernelError

#: the most bytes all buffers of one launch may take (the interpreter holds them in memory)
MAX_BUFFER_BYTES = 1 << 30
#: the largest grid or block dimension accepted (CUDA's grid x limit is 2**31 - 1)
MAX_DIM = (1 << 31) - 1
#: CUDA's launch limits on sm_90 (CUDA C++ Programming Guide, compute capability 9.0): the
#: largest block dimensions and threads per block, the largest grid y / z, and the largest
#: (non-portable) cluster
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
MAX_GRID_YZ = 65535
MAX_CLUSTER_CTAS = 16
#: the most dynamic shared memory a launch may ask for (sm_90: 227 KiB per block)
MAX_SMEM = 227 * 1024
#: the largest by-value parameter (PTX kernel parameters total at most 32,764 bytes)
MAX_PARAM_BYTES = 32764

#: scalar field kinds of a struct: name -> (bytes, "int" | "uint" | "float")
SCALAR_KINDS = {"u8": (1, "uint"), "u16": (2, "uint"), "u32": (4, "uint"), "u64": (8, "uint"),
                "s8": (1, "int"), "s16": (2, "int"), "s32": (4, "int"), "s64": (8, "int"),
                "f16": (2, "float"), "f32": (4, "float"), "f64": (8, "float")}
TENSORMAP_BYTES = 128
TENSORMAP_ALIGN = 64
_TENSORMAP_KEYS = {"dtype", "shape", "box", "buffer", "swizzle", "strides", "elem_strides", "oob_fill",
                   "padding", "elem_type_enum", "mode"}
_IM2COL_KEYS = {"mode", "dtype", "shape", "buffer", "swizzle", "strides", "element_strides", "oob_fill",
                "lower_corner", "upper_corner", "channels_per_pixel", "pixels_per_column"}
#: cuTensorMapEncodeIm2col's limits (PTX ISA §5.5.4.1: corner range per tensor rank)
IM2COL_CORNER_RANGE = {3: (-(2**15), 2**15 - 1), 4: (-(2**7), 2**7 - 1), 5: (-(2**4), 2**4 - 1)}
_SWIZZLE_SPAN = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
_DTYPE_BYTES = None


def _show(v) -> str:
    try:
        s = json.dumps(v)
    except (TypeError, ValueError):
        s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class _Checker:
    def __init__(self, path: str):
        self.path = path

    def fail(self, keys: list, what: str, got=None, show_got=True):
        raise KernelError(f"launch spec: {_keypath(keys)}: {what}" + (f", got {_show(got)}" if show_got else ""),
                          self.path, *locate(self.path, keys))

    def obj(self, v, keys):
        if not isinstance(v, dict):
            self.fail(keys, "expected an object", v)
        for k in v:
            if not isinstance(k, str):
                self.fail(keys, "keys must be strings", k)
        return v

    def int_(self, v, keys, lo=0, hi=None, what="a non-negative integer"):
        if not _is_int(v) or v < lo or (hi is not None and v > hi):
            self.fail(keys, f"expected {what}", v)
        return v

    def str_(self, v, keys, what="a string"):
        if not isinstance(v, str):
            self.fail(keys, f"expected {what}", v)
        return v

    def ints(self, v, keys, lo=0, what="a non-negative integer", max_len=8):
        if not isinstance(v, list):
            self.fail(keys, f"expected a list of {what.removeprefix('a ').removeprefix('an ')}s", v)
        if len(v) > max_len:
            self.fail(keys, f"expected at most {max_len} entries", len(v))
        for i, x in enumerate(v):
            self.int_(x, keys + [i], lo, None, what)
        return v

    def dim3(self, v, keys, hi):
        if v is None:
            return
        if _is_int(v):
            v = [v]
            self.int_(v[0], keys, 1, hi, f"a positive integer (at most {hi})")
            return
        if not isinstance(v, list) or not 1 <= len(v) <= 3:
            self.fail(keys, "expected 1 to 3 positive integers", v)
        for i, x in enumerate(v):
            self.int_(x, keys + [i], 1, hi, f"a positive integer (at most {hi})")

    def limits(self, d):
        """The hardware's limits on a launch's shape (a kernel cannot be launched beyond them)."""
        def dims(v):
            v = [v] if _is_int(v) else list(v or [])
            return v + [1] * (3 - len(v))
        block, grid, cluster = dims(d.get("block")), dims(d.get("grid")), dims(d.get("cluster"))
        for i, (n, hi) in enumerate(zip(block, MAX_BLOCK)):
            if n > hi:
                self.fail(["block", i], f"a block dimension {'xyz'[i]} is at most {hi} on sm_90", n)
        if block[0] * block[1] * block[2] > MAX_THREADS_PER_BLOCK:
            self.fail(["block"], f"a block has at most {MAX_THREADS_PER_BLOCK} threads on sm_90, this one "
                      f"{block[0] * block[1] * block[2]}", show_got=False)
        for i in (1, 2):
            if grid[i] > MAX_GRID_YZ:
                self.fail(["grid", i], f"grid dimension {'xyz'[i]} is at most {MAX_GRID_YZ}", grid[i])
        if cluster[0] * cluster[1] * cluster[2] > MAX_CLUSTER_CTAS:
            self.fail(["cluster"], f"a cluster has at most {MAX_CLUSTER_CTAS} CTAs on sm_90, this one "
                      f"{cluster[0] * cluster[1] * cluster[2]}", show_got=False)
        for i, (g, c) in enumerate(zip(grid, cluster)):
            if g % c and d.get("grid") is not None:  # (no grid: one cluster runs)
                self.fail(["grid", i], f"grid dimension {'xyz'[i]} must be a multiple of the cluster's ({c})", g)

    # ------------------------------------------------------------------ sections
    def spec(self, d):
        if not isinstance(d, dict):
            raise KernelError(f"launch spec: expected a JSON object, got {_show(d)}", self.path, 1, 1)
        if d.get("kernel") is not None:
            self.str_(d["kernel"], ["kernel"])
        for k, hi in (("grid", MAX_DIM), ("block", MAX_DIM), ("cluster", 16)):
            self.dim3(d.get(k), [k], hi)
        self.limits(d)
        if d.get("args") is not None:
            for name, a in self.obj(d["args"], ["args"]).items():
                self.arg(a, ["args", name])
        total = 0
        if d.get("buffers") is not None:
            for name, b in self.obj(d["buffers"], ["buffers"]).items():
                total += self.buffer(b, ["buffers", name])
                if total > MAX_BUFFER_BYTES:
                    self.fail(["buffers", name], f"the launch's buffers take more than {MAX_BUFFER_BYTES} bytes "
                              f"(the most one launch may hold)", show_got=False)
        if d.get("tensormaps") is not None:
            for name, t in self.obj(d["tensormaps"], ["tensormaps"]).items():
                self.tensormap(t, ["tensormaps", name])
        if d.get("outputs") is not None:
            o = d["outputs"]
            if not isinstance(o, list):
                self.fail(["outputs"], "expected a list of buffer names", o)
            for i, x in enumerate(o):
                self.str_(x, ["outputs", i], "a buffer name")
        for k in ("dynamic_smem", "shared_bytes"):
            if d.get(k) is not None:
                self.int_(d[k], [k], 0, MAX_SMEM, f"a non-negative integer (at most {MAX_SMEM})")
        if d.get("cooperative") is not None and not isinstance(d["cooperative"], bool):
            self.fail(["cooperative"], "expected true or false", d["cooperative"])
        if d.get("dependent") is not None:
            self.dependent(d["dependent"])

    def dependent(self, dep):
        """The dependent grid of a PDL pair: a launch of its own (no tensor maps, no nesting) whose
        ``buffers`` are buffer objects or names of the primary launch's buffers."""
        keys = ["dependent"]
        self.obj(dep, keys)
        extra = set(dep) - {"kernel", "grid", "block", "cluster", "args", "buffers", "outputs", "dynamic_smem"}
        if extra:
            self.fail(keys, f"unknown key(s) {', '.join(sorted(extra))} (a dependent launch has kernel, grid, "
                      f"block, cluster, args, buffers, outputs, dynamic_smem)", show_got=False)
        if not isinstance(dep.get("kernel"), str):
            self.fail(keys + ["kernel"], "a dependent launch names its kernel (a string)", dep.get("kernel"))
        sub = _Checker(self.path)
        sub.fail = lambda k, what, got=None, show_got=True: self.fail(keys + k, what, got, show_got)
        sub.spec({k: v for k, v in dep.items() if k != "buffers"})
        for name, b in self.obj(dep.get("buffers") or {}, keys + ["buffers"]).items():
            if not isinstance(b, str):
                self.buffer(b, keys + ["buffers", name])

    def arg(self, a, keys):
        if isinstance(a, (bool, int, float, str)):
            return
        if not isinstance(a, dict):
            self.fail(keys, "expected a number, a boolean, an expression string, {\"bytes\": HEX} or "
                      "{\"struct\": {...}}", a)
        if set(a) == {"bytes"}:
            h = a["bytes"]
            if not isinstance(h, str) or not re.fullmatch(r"(?:0x)?(?:[0-9a-fA-F]{2})*", h.replace(" ", "")):
                self.fail(keys + ["bytes"], "expected a string of hexadecimal byte pairs", h)
            if len(h) > 2 * MAX_PARAM_BYTES + 2 + h.count(" "):
                self.fail(keys + ["bytes"], f"more than {MAX_PARAM_BYTES} bytes", show_got=False)
            return
        if set(a) == {"struct"}:
            self.struct(a["struct"], keys + ["struct"])
            return
        self.fail(keys, "expected {\"bytes\": HEX} or {\"struct\": {OFFSET: FIELD, ...}}", a)

    def struct(self, s, keys):
        self.obj(s, keys)
        spans = []
        for off_s, f in s.items():
            fk = keys + [off_s]
            if not re.fullmatch(r"[0-9]{1,6}", off_s):
                self.fail(fk, "a struct field's key is its byte offset, a decimal integer", off_s)
            off = int(off_s)
            if off >= MAX_PARAM_BYTES:
                self.fail(fk, f"offset {off} is past the largest parameter ({MAX_PARAM_BYTES} bytes)",
                          show_got=False)
            size = self.field(f, fk, off)
            spans.append((off, off + size, off_s))
        spans.sort()
        for (a0, a1, ak), (b0, b1, bk) in zip(spans, spans[1:]):
            if b0 < a1:
                self.fail(keys + [bk], f"field at offset {b0} overlaps the field at offset {a0} "
                          f"(bytes {a0}..{a1 - 1})", show_got=False)

    def field(self, f, keys, off) -> int:
        if not isinstance(f, dict) or len(f) != 1:
            self.fail(keys, "expected one of {KIND: number} (KIND " + "/".join(SCALAR_KINDS) +
                      "), {\"ptr\": BUFFER}, {\"ptr\": {\"buffer\": BUFFER, \"offset\": N}}, {\"tensormap\": {...}}", f)
        (kind, v), = f.items()
        if kind in SCALAR_KINDS:
            size, cls = SCALAR_KINDS[kind]
            if cls == "float":
                if not _is_num(v):
                    self.fail(keys + [kind], "expected a number", v)
            else:
                lo, hi = (-(1 << (8 * size - 1)), (1 << (8 * size)) - 1)
                if not _is_int(v) or not lo <= v <= hi:
                    self.fail(keys + [kind], f"expected an integer that fits {kind}", v)
            if off % size:
                self.fail(keys, f"a {kind} field must be {size}-byte aligned (offset {off})", show_got=False)
            return size
        if kind == "ptr":
            if isinstance(v, dict):
                if set(v) - {"buffer", "offset"} or "buffer" not in v:
                    self.fail(keys + ["ptr"], "expected {\"buffer\": NAME, \"offset\": BYTES}", v)
                self.str_(v["buffer"], keys + ["ptr", "buffer"], "a buffer name")
                if "offset" in v:
                    self.int_(v["offset"], keys + ["ptr", "offset"], -(1 << 40), 1 << 40, "an integer byte offset")
            else:
                self.str_(v, keys + ["ptr"], "a buffer name or {\"buffer\": NAME, \"offset\": BYTES}")
            if off % 8:
                self.fail(keys, f"a pointer field must be 8-byte aligned (offset {off})", show_got=False)
            return 8
        if kind == "tensormap":
            if off % TENSORMAP_ALIGN:
                self.fail(keys, f"a tensor map must be {TENSORMAP_ALIGN}-byte aligned (offset {off})",
                          show_got=False)
            self.tensormap(v, keys + ["tensormap"])
            return TENSORMAP_BYTES
        self.fail(keys, "unknown field kind " + _show(kind) + " (valid: " + ", ".join(list(SCALAR_KINDS) +
                  ["ptr", "tensormap"]) + ")", show_got=False)

    def buffer(self, b, keys) -> int:
        self.obj(b, keys)
        extra = set(b) - {"dtype", "shape"}
        if extra:
            self.fail(keys, f"unknown key(s) {', '.join(sorted(extra))} (a buffer has dtype and shape)",
                      show_got=False)
        for k in ("dtype", "shape"):
            if k not in b:
                self.fail(keys, f"a buffer needs {k}", show_got=False)
        self.str_(b["dtype"], keys + ["dtype"], "a dtype name")
        self.ints(b["shape"], keys + ["shape"])
        n = _itemsize(b["dtype"])
        for s in b["shape"]:
            n *= s
            if n > MAX_BUFFER_BYTES:
                self.fail(keys + ["shape"], f"the buffer takes more than {MAX_BUFFER_BYTES} bytes", b["shape"])
        return n

    def tensormap(self, t, keys):
        self.obj(t, keys)
        if "mode" in t:
            self.str_(t["mode"], keys + ["mode"], "a string (\"tile\" or \"im2col\")")
            if t["mode"] not in ("tile", "im2col"):
                self.fail(keys + ["mode"], "expected \"tile\" or \"im2col\"", t["mode"])
            if t["mode"] == "im2col":
                return self.im2col_map(t, keys)
        extra = set(t) - _TENSORMAP_KEYS
        if extra:
            self.fail(keys, f"unknown key(s) {', '.join(sorted(extra))} (valid: {', '.join(sorted(_TENSORMAP_KEYS))})",
                      show_got=False)
        for k in ("dtype", "box", "buffer"):
            if k not in t:
                self.fail(keys, f"a tensor map needs {k}", show_got=False)
        self.str_(t["dtype"], keys + ["dtype"], "a dtype name")
        self.str_(t["buffer"], keys + ["buffer"], "a buffer name")
        self.ints(t["box"], keys + ["box"], 1, "a positive integer", 5)
        if "shape" in t:
            self.ints(t["shape"], keys + ["shape"], 0, "a non-negative integer", 5)
        if "strides" in t:
            self.ints(t["strides"], keys + ["strides"], 0, "a non-negative integer", 5)
        if "elem_strides" in t:
            self.ints(t["elem_strides"], keys + ["elem_strides"], 1, "a positive integer", 5)
        for k in ("swizzle", "oob_fill", "padding"):
            if k in t and not isinstance(t[k], str):
                self.fail(keys + [k], "expected a string", t[k])

    def im2col_map(self, t, keys):
        """An im2col tensor map (``cuTensorMapEncodeIm2col``), row-major like numpy: ``shape``
        ``[N, (D,) (H,) W, C]``, corners ``[(D,) (H,) W]``."""
        extra = set(t) - _IM2COL_KEYS
        if extra:
            hint = (" (an im2col map copies pixels_per_column x channels_per_pixel elements; it has no box)"
                    if "box" in extra else "")
            self.fail(keys, f"unknown key(s) {', '.join(sorted(extra))} for an im2col tensor map (valid: "
                      f"{', '.join(sorted(_IM2COL_KEYS))}){hint}", show_got=False)
        for k in ("dtype", "buffer", "lower_corner", "upper_corner", "channels_per_pixel", "pixels_per_column"):
            if k not in t:
                self.fail(keys, f"an im2col tensor map needs {k}", show_got=False)
        self.str_(t["dtype"], keys + ["dtype"], "a dtype name")
        self.str_(t["buffer"], keys + ["buffer"], "a buffer name")
        rank = None
        if "shape" in t:
            self.ints(t["shape"], keys + ["shape"], 1, "a positive integer", 5)
            rank = len(t["shape"])
            if not 3 <= rank <= 5:
                self.fail(keys + ["shape"], "an im2col tensor map has rank 3, 4 or 5 ([N, W, C], [N, H, W, C] or "
                          "[N, D, H, W, C])", t["shape"])
        for k in ("lower_corner", "upper_corner"):
            v = t[k]
            if not isinstance(v, list) or not 1 <= len(v) <= 3:
                self.fail(keys + [k], "expected 1 to 3 integers, one per spatial dim ([(D,) (H,) W])", v)
            for i, x in enumerate(v):
                if not _is_int(x):
                    self.fail(keys + [k, i], "expected an integer", x)
            if rank is not None and len(v) != rank - 2:
                self.fail(keys + [k], f"a rank-{rank} im2col map has {rank - 2} spatial dim(s): expected "
                          f"{rank - 2} value(s)", v)
        if len(t["lower_corner"]) != len(t["upper_corner"]):
            self.fail(keys + ["upper_corner"], f"expected {len(t['lower_corner'])} value(s), as lower_corner has",
                      t["upper_corner"])
        r = len(t["lower_corner"]) + 2
        lo, hi = IM2COL_CORNER_RANGE[r]
        for k in ("lower_corner", "upper_corner"):
            for i, x in enumerate(t[k]):
                if not lo <= x <= hi:
                    self.fail(keys + [k, i], f"a corner of a rank-{r} im2col map is in [{lo}, {hi}]", x)
        if rank is not None:
            for i in range(rank - 2):
                n = t["shape"][1 + i] - 1 + t["upper_corner"][i] - t["lower_corner"][i] + 1
                if n < 1:
                    self.fail(keys + ["upper_corner", i], f"the bounding box is empty along spatial dim {i} "
                              f"(extent {t['shape'][1 + i]} - 1 + upper {t['upper_corner'][i]} < lower "
                              f"{t['lower_corner'][i]})", show_got=False)
        self.int_(t["channels_per_pixel"], keys + ["channels_per_pixel"], 1, 256, "an integer in [1, 256]")
        self.int_(t["pixels_per_column"], keys + ["pixels_per_column"], 1, 1024, "an integer in [1, 1024]")
        if "strides" in t:
            self.ints(t["strides"], keys + ["strides"], 0, "a non-negative integer", 5)
        if "element_strides" in t:
            self.ints(t["element_strides"], keys + ["element_strides"], 1, "a positive integer", 5)
            for i, x in enumerate(t["element_strides"]):
                if x > 8:
                    self.fail(keys + ["element_strides", i], "expected an integer in [1, 8]", x)
            if len(t["element_strides"]) != r:
                self.fail(keys + ["element_strides"], f"expected {r} values, one per dim", t["element_strides"])
        for k in ("swizzle", "oob_fill"):
            if k in t and not isinstance(t[k], str):
                self.fail(keys + [k], "expected a string", t[k])
        if "swizzle" in t and t["swizzle"] not in _SWIZZLE_SPAN:
            self.fail(keys + ["swizzle"], f"expected one of {', '.join(_SWIZZLE_SPAN)}", t["swizzle"])
        if "oob_fill" in t and t["oob_fill"] not in ("zero", "nan"):
            self.fail(keys + ["oob_fill"], "expected \"zero\" or \"nan\"", t["oob_fill"])
        inner = t["channels_per_pixel"] * _itemsize(t["dtype"])
        if inner % 16:
            self.fail(keys + ["channels_per_pixel"], f"a pixel's channels take {t['channels_per_pixel']} x "
                      f"{_itemsize(t['dtype'])} = {inner} bytes; they must be a multiple of 16 bytes", show_got=False)
        span = _SWIZZLE_SPAN.get(t.get("swizzle", "none"), 0)
        if span and inner > span:
            self.fail(keys + ["channels_per_pixel"], f"a pixel's channels take {inner} bytes, more than the "
                      f"{t['swizzle']} swizzle span of {span} bytes", show_got=False)


def _itemsize(name) -> int:
    from . import dtypes

    r = dtypes.lookup(name)
    return r.itemsize if r is not None else 1


def _keypath(keys) -> str:
    out = ""
    for k in keys:
        if isinstance(k, int):
            out += f"[{k}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) or re.fullmatch(r"[0-9]+", k):
            out += ("." if out else "") + k
        else:
            out += f"[{json.dumps(k)}]"
    return out


def check(d, path: str = "<launch>") -> None:
    """Raise ``KernelError`` at the first value of ``d`` the launch-spec schema rejects."""
    _Checker(path).spec(d)


# --------------------------------------------------------------------------- positions


def locate(path: str, keys) -> tuple[int, int]:
    """``(line, column)`` of the value at ``keys`` in the JSON file ``path`` (1-based), the
    innermost one found, else ``(1, 1)``: a spec given inline or as a dict has no file, a zoo
    manifest's launch sits under its variant."""
    try:
        if path.startswith("<") or len(path) > 4096:
            return 1, 1
        text = Path(path).read_text()
    except (OSError, ValueError):
        return 1, 1
    try:
        return _Locator(text).find(list(keys))
    except (ValueError, IndexError, RecursionError):
        return 1, 1


class _Locator:
    """A small JSON scanner that finds where the value at a key path starts."""

    _ws = re.compile(r"[ \t\n\r]*")

    def __init__(self, text: str):
        self.text = text
        self.dec = json.JSONDecoder()

    def pos(self, i) -> tuple[int, int]:
        line = self.text.count("\n", 0, i) + 1
        return line, i - (self.text.rfind("\n", 0, i) + 1) + 1

    def skip(self, i):
        return self._ws.match(self.text, i).end()

    def find(self, keys):
        i = self.skip(0)
        best = i
        for k in keys:
            nxt = self.child(i, k)
            if nxt is None:
                break
            i = best = nxt
        return self.pos(best)

    def child(self, i, key):
        t = self.text
        if t[i] == "{" and isinstance(key, str):
            i = self.skip(i + 1)
            while t[i] != "}":
                k, i = json.decoder.scanstring(t, i + 1)
                i = self.skip(i)
                i = self.skip(i + 1)  # ':'
                if k == key:
                    return i
                i = self.skip(self.end(i))
                if t[i] == ",":
                    i = self.skip(i + 1)
            return None
        if t[i] == "[" and isinstance(key, int):
            i = self.skip(i + 1)
            n = 0
            while t[i] != "]":
                if n == key:
                    return i
                i = self.skip(self.end(i))
                if t[i] == ",":
                    i = self.skip(i + 1)
                n += 1
            return None
        return None

    def end(self, i):
        _, e = self.dec.raw_decode(self.text, i)
        return e
