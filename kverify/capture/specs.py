"""Turning the shim's records into launch specs (the ``kverify.launch`` JSON form) and an index.

Standard library only (see build.py). Per launch, each parameter becomes:

- a tensor map (``tensormaps``) when it is 128 bytes equal to a map recorded at
  ``cuTensorMapEncodeTiled``, its global memory a named buffer ``allocN`` (the allocation it
  points into), its shape, box, strides and swizzle from the encode call;
- a buffer (``buffers``) when it is 8 bytes equal to an address inside a live allocation, sized
  from the pointer to the allocation's end, dtype ``uint8`` (or the tensor map's, when a map
  covers that allocation);
- a scalar (``args``) when it is at most 8 bytes and not a PTX array, decoded with its PTX type
  when the module's PTX is known (unsigned little-endian otherwise);
- otherwise (a by-value struct) ``{"bytes": hex}``, or, when 8-byte aligned words inside it
  point into allocations or 64-byte aligned runs equal recorded tensor maps, the typed form
  ``{"struct": {offset: field}}`` with those pointers (into buffers ``allocN``) and tensor maps
  and the remaining bytes as unsigned fields; the index lists what was found.

The launch's snapshot (the bytes of what it reaches, when the shim recorded them) becomes
``launch_..._<kernel>.npz``: the spec's buffers by name in their dtypes and ``var:NAME`` per module
variable, what ``kverify check --inputs`` takes.
"""
from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zipfile
from pathlib import Path

SCHEMA = "kverify.capture/1"

#: CUtensorMapDataType -> dtype name of kverify.launch.dtypes (TF32 kinds are stored as float32)
TMAP_DTYPES = {0: "uint8", 1: "uint16", 2: "uint32", 3: "int32", 4: "uint64", 5: "int64", 6: "float16",
               7: "float32", 8: "float64", 9: "bfloat16", 10: "float32", 11: "float32", 12: "float32"}
SWIZZLE = {0: "none", 1: "32B", 2: "64B", 3: "128B"}
OOB = {0: "zero", 1: "nan"}
#: CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, _HEIGHT, _DEPTH (cuFuncSetAttribute)
REQUIRED_CLUSTER = (11, 12, 13)
ITEMSIZE = {"uint8": 1, "uint16": 2, "uint32": 4, "int32": 4, "uint64": 8, "int64": 8, "float16": 2,
            "float32": 4, "float64": 8, "bfloat16": 2}


def read_records(outdir: Path) -> list[dict]:
    recs = []
    for f in sorted(outdir.glob("records.*.jsonl")):
        pid = int(f.name.split(".")[1])
        for line in f.read_text().splitlines():
            line = line.strip()
            if line:
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:  # a line cut short by a crash
                    continue
                r["pid"] = pid
                recs.append(r)
    return recs


# ---------------------------------------------------------------- PTX from module images

def _fatbin_ptx(data: bytes) -> tuple[str | None, str]:
    """The embedded PTX of a fatbin when it is stored uncompressed, else ``None`` and why."""
    if len(data) < 16 or struct.unpack_from("<I", data, 0)[0] != 0xBA55ED50:
        return None, "not a fatbin"
    hsize = struct.unpack_from("<H", data, 6)[0]
    end = hsize + struct.unpack_from("<Q", data, 8)[0]
    pos, kinds, best = hsize, [], None
    while pos + 16 <= min(end, len(data)):
        kind, _ver, ehsize, padded = struct.unpack_from("<HHII", data, pos)
        if ehsize == 0:
            break
        payload = data[pos + ehsize:pos + ehsize + padded]
        if kind == 1:
            text = payload.rstrip(b"\0")
            if b".entry" in text and (b".version" in text[:4096]):
                try:
                    t = text.decode()
                except UnicodeDecodeError:
                    t = None
                if t is not None:
                    arch = re.search(r"\.target\s+sm_(\d+)(a?)", t)
                    rank = (int(arch.group(1)), arch.group(2)) if arch else (0, "")
                    if best is None or rank > best[0]:
                        best = (rank, t)
            kinds.append("ptx (compressed)" if best is None else "ptx")
        elif kind == 2:
            kinds.append("cubin")
        pos += ehsize + padded
    if best:
        return best[1], "fatbin's embedded PTX"
    return None, f"fatbin holds {', '.join(kinds) or 'nothing readable'}"


def _fatbin_arch_note(data: bytes, ptx: str) -> str | None:
    """When the fatbin holds a cubin for a higher architecture than the PTX's ``.target``: a device
    of that architecture runs the cubin (compiled on its own, ``__CUDA_ARCH__`` branches
    included), not the PTX that is checked; the note saying so, else None."""
    t = re.search(r"\.target\s+sm_(\d+)(a?)", ptx)
    if len(data) < 16 or not t or struct.unpack_from("<I", data, 0)[0] != 0xBA55ED50:
        return None
    hsize = struct.unpack_from("<H", data, 6)[0]
    end = min(hsize + struct.unpack_from("<Q", data, 8)[0], len(data))
    pos, cubins = hsize, []
    while pos + 32 <= end:
        kind, _ver, ehsize, padded = struct.unpack_from("<HHII", data, pos)
        if ehsize == 0:
            break
        if kind == 2:  # an ELF cubin; its SM number is at byte 28 of the entry's header
            cubins.append(struct.unpack_from("<I", data, pos + 28)[0])
        pos += ehsize + padded
    higher = sorted({a for a in cubins if a > int(t.group(1))})
    if not higher:
        return None
    return (f"the checked PTX is .target sm_{t.group(1)}{t.group(2)}, but the fatbin also holds a cubin for "
            f"{', '.join(f'sm_{a}' for a in higher)}: a device of that architecture runs the cubin, not this PTX "
            "(the checked code may not be the code that ran)")


def _cuobjdump_ptx(path: Path) -> str | None:
    exe = shutil.which("cuobjdump")
    if not exe:
        return None
    try:
        r = subprocess.run([exe, "-ptx", str(path)], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0 or ".entry" not in r.stdout:
        return None
    # cuobjdump prints one "ptxasOptions"/header block per PTX file; keep the last (highest) one
    parts = re.split(r"\n(?=\.version\s)", r.stdout)
    texts = [p[p.index(".version"):] if ".version" in p else p for p in parts if ".entry" in p]
    return texts[-1] if texts else None


def module_ptx(outdir: Path, module: dict) -> tuple[str | None, str]:
    """(PTX file name in ``outdir`` or None, how it was obtained / why not)."""
    f = module.get("file")
    if not f:
        return None, "module image not recorded"
    path = outdir / f
    if module["kind"] == "ptx":
        return f, "loaded as PTX text"
    data = path.read_bytes() if path.exists() else b""
    text, why = (None, "cubin: machine code only, no PTX") if module["kind"] == "cubin" else _fatbin_ptx(data)
    if text is None and module["kind"] == "fatbin":
        text = _cuobjdump_ptx(path)
        if text is not None:
            why = "fatbin's embedded PTX (cuobjdump)"
    if text is None:
        return None, why + "; pass the kernel's PTX to kverify check yourself"
    name = Path(f).with_suffix(".ptx").name
    (outdir / name).write_text(text)
    return name, why


_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)", re.S)
_PARAM = re.compile(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(?:\.ptr\s+(?:\.(?!align)\w+\s+)*(?:\.align\s+\d+\s+)?)?"
                    r"([A-Za-z_$%][\w$]*)\s*(?:\[(\d+)\])?")


def ptx_params(ptx: str) -> dict[str, list[dict]]:
    """Per ``.entry``: its parameters' names, PTX types and element counts, and whether each is an
    array (``.b8 p[N]``: a by-value struct, also when it has one to eight bytes -- CuTe passes empty
    tiler structs as ``.b8 p[1]``)."""
    out = {}
    for m in _ENTRY.finditer(ptx):
        ps = []
        for p in _PARAM.finditer(m.group(2)):
            ps.append({"name": p.group(3), "type": p.group(2), "count": int(p.group(4) or 1),
                       "array": p.group(4) is not None})
        out[m.group(1)] = ps
    return out


def ptx_clusters(ptx: str) -> dict[str, list[int]]:
    """Per ``.entry`` with a ``.reqnctapercluster`` directive: its cluster shape (x, y, z)."""
    out = {}
    for m in _ENTRY.finditer(ptx):
        head = ptx[m.end():ptx.find("{", m.end())]
        c = re.search(r"\.reqnctapercluster\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", head)
        if c:
            out[m.group(1)] = [int(c.group(1)), int(c.group(2) or 1), int(c.group(3) or 1)]
    return out


def _scalar(raw: bytes, ptype: str | None):
    if ptype and ptype[0] == "f" and len(raw) in (4, 8):
        v = struct.unpack("<f" if len(raw) == 4 else "<d", raw)[0]
        # a NaN keeps its bits (JSON's NaN, not strict JSON anyway, is one NaN: a payload was lost)
        return {"bytes": raw.hex()} if v != v else v
    v = int.from_bytes(raw, "little", signed=bool(ptype and ptype[0] == "s"))
    return v


# ---------------------------------------------------------------- specs

def _safe(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.-]", "_", name or "unnamed")
    return s[:80]


def write_specs(outdir: Path, command: list[str] | None = None, limit: int | None = 1000) -> dict:
    """Reads the records in ``outdir``, writes ``launch_<pid>_<seq>_<kernel>.json`` per launch
    (the first ``limit``; ``None``: every one) and ``index.json``; returns the index."""
    recs = read_records(outdir)
    modules, ptx_of, ptx_why, entries, clusters = {}, {}, {}, {}, {}
    live: dict[tuple, dict[int, int]] = {}  # pid -> {base: size}, oldest first
    alloc_names: dict[tuple, str] = {}
    tmaps: dict[str, dict] = {}
    attrs: dict[tuple, dict[int, int]] = {}  # (pid, function) -> {attribute: value}
    launches, notes = [], []
    nalloc = graph_launches = 0
    for r in recs:
        pid = r["pid"]
        t = r.get("type")
        if t == "module":
            modules[(pid, r["id"])] = r
        elif t == "alloc":
            mine = live.setdefault(pid, {})
            mine.pop(r["ptr"], None)  # (a reused address is the newest allocation)
            mine[r["ptr"]] = r["size"]
            alloc_names[(pid, r["ptr"])] = f"alloc{nalloc}"
            nalloc += 1
        elif t == "free":
            live.get(pid, {}).pop(r["ptr"], None)
        elif t == "tensormap":
            tmaps[r["map"]] = r
        elif t == "func_attribute":
            attrs.setdefault((pid, r["function"]), {})[r["attribute"]] = r["value"]
        elif t == "graph_launch":
            graph_launches += r.get("result", 0) == 0
        elif t == "launch":
            if r.get("result", 0) != 0:
                notes.append(f"launch {r['seq']} ({r.get('name') or 'unnamed'}, pid {pid}): the driver refused it "
                             f"(CUresult {r['result']}); it did not run, no spec written")
                continue
            if limit is not None and len(launches) >= limit:
                notes.append(f"launches after the first {limit} not written (--limit)")
                continue
            req = [attrs.get((pid, r["function"]), {}).get(a, 0) for a in REQUIRED_CLUSTER]
            launches.append((dict(r, required_cluster=req), dict(live.get(pid, {}))))
    if graph_launches:
        notes.append(f"{graph_launches} graph launch(es): their kernels are not recorded")
    index = {"schema": SCHEMA, "command": command, "directory": str(outdir), "launches": [],
             "modules": [], "tensormaps": len(tmaps), "allocations": nalloc, "notes": list(dict.fromkeys(notes))}
    arch_notes = {}
    for key, m in sorted(modules.items()):
        f, why = module_ptx(outdir, m)
        ptx_of[key], ptx_why[key] = f, why
        entry = {"pid": key[0], "id": key[1], "api": m["api"], "kind": m["kind"], "image": m.get("file"), "ptx": f,
                 "ptx_note": why}
        if f:
            text = (outdir / f).read_text()
            entries[key] = ptx_params(text)
            clusters[key] = ptx_clusters(text)
            if m["kind"] == "fatbin" and (outdir / m["file"]).exists():
                arch = _fatbin_arch_note((outdir / m["file"]).read_bytes(), text)
                if arch:
                    arch_notes[key] = entry["note"] = arch
        index["modules"].append(entry)
    for r, allocs in launches:
        index["launches"].append(_launch_spec(outdir, r, allocs, alloc_names, tmaps, modules, ptx_of, ptx_why,
                                              entries, clusters, arch_notes))
    (outdir / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    return index


def _find_alloc(allocs: dict[int, int], addr: int):
    """The newest live allocation holding ``addr`` (a pool hands out memory inside a freed one)."""
    for base, size in reversed(allocs.items()):
        if base <= addr < base + max(size, 1):
            return base, size
    return None


def _tensormap_spec(tm: dict, allocs, alloc_names, pid, buffers) -> tuple[dict | None, str | None]:
    dtype = TMAP_DTYPES.get(tm["dtype"])
    if dtype is None:
        return None, f"tensor map data type {tm['dtype']} has no kverify dtype"
    if tm["api"] not in ("cuTensorMapEncodeTiled", "cuTensorMapEncodeIm2col"):
        return None, f"{tm['api']} tensor maps are not in the launch spec form"
    im2col = tm["api"] == "cuTensorMapEncodeIm2col"
    if tm["swizzle"] not in SWIZZLE or tm.get("interleave", 0) != 0:
        return None, f"tensor map swizzle {tm['swizzle']} / interleave {tm.get('interleave')} not in the launch spec form"
    a = _find_alloc(allocs, tm["addr"])
    if a is None:
        return None, f"tensor map's global address {tm['addr']:#x} is in no recorded allocation"
    base, size = a
    if tm["addr"] != base:
        return None, f"tensor map's global address is {tm['addr'] - base} bytes into its allocation"
    name = alloc_names[(pid, base)]
    esize = ITEMSIZE[dtype]
    old = buffers.get(name)
    if old is None or old["dtype"] == "uint8":
        buffers[name] = {"dtype": dtype, "shape": [max(size // esize, 1)]}
    # the driver takes any stride for a dimension of extent 1 (CUTLASS passes 0 for a batch of
    # one); its value is never used, so give it the packed one, which the launch spec accepts
    strides = list(tm["strides"])
    for i, st in enumerate(strides):
        if st == 0 and tm["dims"][i + 1] == 1:
            inner = strides[i - 1] if i else esize
            strides[i] = -(-inner * tm["dims"][i] // 16) * 16
    if im2col:
        # cuTensorMapEncodeIm2col's arguments, innermost first (C, W, H, D, N; corners W, H, D),
        # as the launch spec's row-major im2col map
        spec = {"mode": "im2col", "dtype": dtype, "shape": list(reversed(tm["dims"])),
                "strides": list(reversed(strides)), "lower_corner": list(reversed(tm["lower_corner"])),
                "upper_corner": list(reversed(tm["upper_corner"])),
                "channels_per_pixel": tm["channels_per_pixel"], "pixels_per_column": tm["pixels_per_column"],
                "swizzle": SWIZZLE[tm["swizzle"]], "oob_fill": OOB.get(tm.get("oob_fill", 0), "zero"),
                "buffer": name}
        if any(e != 1 for e in tm.get("element_strides") or []):
            spec["element_strides"] = list(reversed(tm["element_strides"]))
        return spec, None
    spec = {"dtype": dtype, "shape": list(reversed(tm["dims"])), "box": list(reversed(tm["box"])),
            "strides": list(reversed(strides)), "swizzle": SWIZZLE[tm["swizzle"]],
            "oob_fill": OOB.get(tm.get("oob_fill", 0), "zero"), "buffer": name}
    if any(e != 1 for e in tm.get("element_strides") or []):
        spec["elem_strides"] = list(reversed(tm["element_strides"]))
    return spec, None


def _struct_value(raw: bytes, inside: list, buffers: dict, allocs, pid, alloc_names) -> dict:
    """A by-value struct: ``{"bytes": hex}``, or, when pointers or tensor maps were found in it,
    the typed form ``{"struct": {offset: field}}`` -- the pointers as ``{"ptr": {"buffer": allocN,
    "offset": n}}`` (each allocation a buffer of its own), the maps as ``{"tensormap": ...}``,
    every other nonzero byte as an unsigned field of the widest aligned size."""
    ptrs = [f for f in inside if "pointer" in f]
    maps = [f for f in inside if isinstance(f.get("tensormap"), dict)]
    if not ptrs and not maps:
        return {"bytes": raw.hex()}
    fields, covered = {}, set()
    for f in maps:
        fields[f["offset"]] = {"tensormap": f["tensormap"]}
        covered.update(range(f["offset"], f["offset"] + 128))
    for f in ptrs:
        name = f["pointer"]
        if name not in buffers:
            buffers[name] = {"dtype": "uint8", "shape": [max(f["allocation_size"], 1)]}
        fields[f["offset"]] = {"ptr": {"buffer": name, "offset": f["byte_offset"]} if f["byte_offset"] else name}
        covered.update(range(f["offset"], f["offset"] + 8))
    off = 0
    while off < len(raw):
        for width, kind in ((8, "u64"), (4, "u32"), (2, "u16"), (1, "u8")):
            if off % width == 0 and off + width <= len(raw) and not covered.intersection(range(off, off + width)):
                break
        else:
            off += 1
            continue
        v = int.from_bytes(raw[off:off + width], "little")
        if v:
            fields[off] = {kind: v}
        off += width
    return {"struct": {str(k): fields[k] for k in sorted(fields)}}


def _launch_spec(outdir, r, allocs, alloc_names, tmaps, modules, ptx_of, ptx_why, entries, clusters=None,
                 arch_notes=None) -> dict:
    pid = r["pid"]
    name = r.get("name")
    mkey = (pid, r.get("module", -1))
    ptx = ptx_of.get(mkey)
    pparams = (entries.get(mkey) or {}).get(name) if name else None
    spec = {"kernel": name, "grid": r["grid"], "block": r["block"], "cluster": r["cluster"], "args": {},
            "buffers": {}, "tensormaps": {}}
    if r.get("dynamic_smem"):
        spec["dynamic_smem"] = r["dynamic_smem"]
    # (absent, a check assumed a cooperative launch where the kernel reads the grid workspace: a
    # grid.sync() launched with cuLaunchKernel, which traps, was verified)
    spec["cooperative"] = "Cooperative" in r["api"] or r["api"].endswith("+cooperative")
    notes, pinfo = [], []
    fixed = ((clusters or {}).get(mkey) or {}).get(name) if name else None
    if fixed and r["cluster"] == [1, 1, 1] and fixed != [1, 1, 1]:
        # (a kernel compiled with its cluster shape, launched without one: the driver uses the
        # kernel's; recorded as 1x1x1, check refused the spec)
        spec["cluster"] = fixed
        notes.append(f"cluster {'x'.join(map(str, fixed))} from the kernel's .reqnctapercluster (the launch names none)")
    req = [v or 1 for v in r.get("required_cluster") or [0, 0, 0]]
    if not fixed and r["cluster"] == [1, 1, 1] and req != [1, 1, 1]:
        # (set with cuFuncSetAttribute / cudaFuncSetAttribute: the driver launches clusters of that
        # shape; recorded as 1x1x1, a race between the CTAs of a cluster was verified away)
        spec["cluster"] = req
        notes.append(f"cluster {'x'.join(map(str, req))} from the function's required cluster attribute "
                     "(cuFuncSetAttribute; the launch names none)")
    if r.get("capturing"):
        notes.append("made during stream capture: the launch did not run then (it runs when the graph is launched, "
                     "on the contents of that time, which are not recorded)")
    if (arch_notes or {}).get(mkey):
        notes.append(arch_notes[mkey])
    if name is None:
        notes.append("the launched function's name is unknown (no cuFuncGetName and not seen at cuModuleGetFunction)")
    if r.get("params") is None:
        notes.append("parameter sizes unknown (no cuFuncGetParamInfo and no PTX): parameters not recorded")
    pointer_bufs = []
    for i, p in enumerate(r.get("params") or []):
        key = str(i)
        ptype = pparams[i]["type"] if pparams and i < len(pparams) else None
        info = {"index": i, "offset": p["offset"], "size": p["size"]}
        if pparams and i < len(pparams):
            info["ptx_name"] = pparams[i]["name"]
        raw = bytes.fromhex(p["hex"]) if p.get("hex") else None
        if raw is None:
            info["kind"] = "unrecorded"
            notes.append(f"parameter {i}: bytes not recorded")
        elif len(raw) == 128 and p["hex"] in tmaps:
            tm = tmaps[p["hex"]]
            ts, why = _tensormap_spec(tm, allocs, alloc_names, pid, spec["buffers"])
            info["kind"] = "tensormap"
            info["encode"] = {k: tm[k] for k in tm if k not in ("map", "type", "pid")}
            if ts:
                spec["tensormaps"][key] = ts
            else:
                spec["args"][key] = {"bytes": p["hex"]}
                notes.append(f"parameter {i}: {why}; given as bytes")
        elif len(raw) == 8 and (ptype is None or ptype in ("u64", "b64", "s64")) and _find_alloc(allocs, int.from_bytes(raw, "little")):
            addr = int.from_bytes(raw, "little")
            base, size = _find_alloc(allocs, addr)
            info.update(kind="pointer", allocation=alloc_names[(pid, base)], byte_offset=addr - base)
            pointer_bufs.append((key, base, size, addr))
        elif len(raw) <= 8 and not (pparams and i < len(pparams) and pparams[i].get("array")):
            info["kind"] = "scalar"
            spec["args"][key] = _scalar(raw, ptype)
            v = int.from_bytes(raw, "little")
            if (ptype is None or ptype in ("u64", "b64", "s64")) and len(raw) == 8 and v:
                # (a pointer into memory the shim did not see allocated becomes a plain integer)
                end = [alloc_names[(pid, b)] for b, n in allocs.items() if b + n == v]
                notes.append(f"parameter {i}: 8 bytes in no recorded allocation, taken as an integer"
                             + (f" (the address just past the end of {end[-1]})" if end else ""))
        else:
            info["kind"] = "struct"
            inside, in_map = [], set()
            for off in range(0, len(raw) - 127, 64):
                h = raw[off:off + 128].hex()
                if h in tmaps:
                    ts, why = _tensormap_spec(tmaps[h], allocs, alloc_names, pid, spec["buffers"])
                    inside.append({"offset": off, "tensormap": ts or why})
                    in_map.update(range(off, off + 128))
            for off in range(0, len(raw) - 7, 8):
                v = int.from_bytes(raw[off:off + 8], "little")
                a = _find_alloc(allocs, v) if v and off not in in_map else None
                if a:
                    inside.append({"offset": off, "pointer": alloc_names[(pid, a[0])], "byte_offset": v - a[0],
                                   "allocation_size": a[1]})
            inside.sort(key=lambda f: f["offset"])
            if inside:
                info["fields"] = inside
            spec["args"][key] = _struct_value(raw, inside, spec["buffers"], allocs, pid, alloc_names)
        pinfo.append(info)
    for key, base, size, addr in pointer_bufs:
        dt = spec["buffers"].get(alloc_names[(pid, base)], {}).get("dtype", "uint8")
        es = ITEMSIZE.get(dt, 1)
        n = (base + size - addr) // es
        spec["buffers"][key] = {"dtype": dt, "shape": [max(n, 1)]}
        if addr != base:
            notes.append(f"parameter {key}: points {addr - base} bytes into {alloc_names[(pid, base)]}; "
                         f"its buffer is the {base + size - addr} bytes from there to the allocation's end")
    by_alloc: dict = {}
    for key, base, _, _ in pointer_bufs:
        by_alloc.setdefault(alloc_names[(pid, base)], []).append(key)
    for alloc, keys in by_alloc.items():
        if len(keys) > 1:  # the spec has no form for two pointer parameters into one buffer
            notes.append(f"parameters {', '.join(keys)} point into one allocation ({alloc}); the spec gives each a "
                         "buffer of its own (aliasing is not expressed): what the kernel does through one to the "
                         "other's bytes (a race, an overlap) is not checked")
    seen_bases = {alloc_names[(pid, b)] for _, b, _, _ in pointer_bufs}
    shared = [n for n in spec["buffers"] if n.startswith("alloc") and n in seen_bases]
    if shared:
        notes.append(f"{', '.join(shared)}: reached both through a pointer parameter and a tensor map; "
                     "the spec gives them separate buffers (aliasing is not expressed)")
    if not spec["tensormaps"]:
        del spec["tensormaps"]
    fname = f"launch_{pid}_{r['seq']:04d}_{_safe(name)}.json"
    (outdir / fname).write_text(json.dumps(spec, indent=1) + "\n")
    starts = {key: addr for key, _, _, addr in pointer_bufs}
    starts.update({n: b for (p, b), n in alloc_names.items() if p == pid and n in spec["buffers"]})
    inputs = _write_inputs(outdir, r, spec, starts, notes, Path(fname).with_suffix(".npz").name)
    m = modules.get(mkey)
    out = {"seq": r["seq"], "pid": pid, "api": r["api"], "kernel": name, "spec": fname, "ptx": ptx,
           "ptx_note": ptx_why.get(mkey) if m else "module not recorded (loaded before capture, or by another path)",
           "grid": r["grid"], "block": r["block"], "cluster": spec["cluster"], "dynamic_smem": r.get("dynamic_smem", 0),
           "param_source": r.get("param_source"), "params": pinfo, "inputs": inputs, "notes": notes}
    if ptx and name:
        out["check"] = f"kverify check {outdir / ptx} --kernel {name} --launch {outdir / fname}" + \
            (f" --inputs {outdir / inputs}" if inputs else "")
    return out


# ---------------------------------------------------------------- buffer contents

#: a launch spec dtype -> the .npy descr ``kverify check --inputs`` takes for it (bfloat16 as its bits)
NPY_DESCR = {"uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "int32": "<i4", "uint64": "<u8", "int64": "<i8",
             "float16": "<f2", "float32": "<f4", "float64": "<f8", "bfloat16": "<u2"}


def _npy(descr: str, raw: bytes) -> bytes:
    """``raw`` as a one-dimensional .npy array (format 1.0) of ``descr`` elements."""
    n = len(raw) // int(descr[2:])
    head = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, n)
    head += " " * (-(len(head) + 11) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode("latin1") + raw


def _snapshot_bytes(outdir: Path, contents: dict, start: int, n: int, var: str | None = None):
    """Bytes [start, start + n) of the launch's snapshot (or variable ``var``'s), or (None, why not)."""
    for b in contents.get("blocks", []):
        if b.get("var") == var and b["ptr"] <= start and start + n <= b["ptr"] + b["size"]:
            if "skipped" in b:
                return None, b["skipped"]
            try:
                with open(outdir / contents["file"], "rb") as f:
                    f.seek(b["at"] + start - b["ptr"])
                    data = f.read(n)
            except OSError as e:
                return None, f"the contents file cannot be read ({e.strerror})"
            return (data, None) if len(data) == n else (None, "the contents file is short")
    return None, "its memory was not in the snapshot"


def _write_inputs(outdir: Path, r: dict, spec: dict, starts: dict, notes: list, fname: str) -> str | None:
    """The launch's snapshot as ``fname`` (.npz: the spec's buffers by name, in their dtypes, and
    ``var:NAME`` per module variable, as bytes), for ``kverify check --inputs``; notes on what it
    lacks. None when nothing was recorded."""
    contents = r.get("contents")
    if contents is None:
        if spec["buffers"] and not r.get("capturing"):
            notes.append("buffer contents not recorded: check runs on generated values")
        return None
    arrays = {}
    for name, b in spec["buffers"].items():
        descr = NPY_DESCR.get(b["dtype"])
        n = ITEMSIZE.get(b["dtype"], 1) * b["shape"][0]
        data, why = _snapshot_bytes(outdir, contents, starts[name], n) if descr and name in starts else \
            (None, "no address for it")
        if data is None:
            notes.append(f"buffer {name}: contents not recorded ({why}); check runs on generated values for it")
        else:
            arrays[name] = _npy(descr, data)
    for b in contents.get("blocks", []):
        if b.get("var") is not None:
            data, why = _snapshot_bytes(outdir, contents, b["ptr"], b["size"], b["var"])
            if data is None:
                notes.append(f"variable {b['var']}: contents not recorded ({why}); check starts it from its initializer")
            else:
                arrays["var:" + b["var"]] = _npy("|u1", data)
    if not arrays:
        return None
    with zipfile.ZipFile(outdir / fname, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for key, data in arrays.items():
            z.writestr(key + ".npy", data)
    return fname
