"""The op table: one row of pure data per PTX instruction family.

A row names the family's mnemonic (the dotted prefix of the opcode, e.g.
``mbarrier.try_wait``), the modifiers it accepts, its operand slots, the state space and
proxy of its memory access, its synchronization effect, the PTX ISA section it follows
(PTX ISA 9.0 numbering and the anchor of its page), and the name of its value semantics
(``kverify.semantics.values`` families) where it computes a value. Small named check functions
enforce modifier rules. The front end, printer, interpreter, verifiers and lowering all
read this table; an instruction that matches no row is an *opaque* op, marked unsupported.
Besides ``effect``, control rows name their ``flow`` (branch, call, return, exit, ...) and
warp-collective rows their ``collective`` exchange; the accessors below (``flow_of``,
``sync_of``, ``semantics_of``, ``param_access``, ``operand_bits``, ...) are how every
checker, the CFG and lowering classify an instruction, never by its name. The schema of a
row (``OpRow``, ``Slot``, ``Form``) is in ``opschema``.

Operand slots are written ``access:name`` with a trailing ``?`` when optional and ``*`` for
a variadic tail. Accesses: ``def`` (register written), ``use`` (value read), ``load`` /
``store`` / ``update`` (memory read / written / read-modify-written through an address),
``addr`` (an address that is not dereferenced: a barrier object, a tensor map),
``target`` (a branch target or callee). A slot may carry its width after ``=`` (see
``operand_bits``).

Modifiers come in *forms* (``Form``): named modifier slots (``ModSlot``: type, rounding,
state space, ...), each with its allowed values, whether it is required and how many of
its values may appear. An opcode is valid when its modifiers fit one of its row's forms
(``form_error``). A row whose syntax is too varied to enumerate has one permissive form
(``loose``): any of its modifiers, in any number and combination.
"""
from __future__ import annotations

from typing import Callable

from .opschema import COLLECTIVES, EFFECTS, FLOWS, Form, OpRow, form, loose, mods, operand_slots
from .types import SCALAR_BITS

SPECIAL_REGISTERS = frozenset({
    "%tid", "%ntid", "%laneid", "%warpid", "%nwarpid", "%warpsize", "%ctaid", "%nctaid", "%smid",
    "%nsmid", "%gridid", "%is_explicit_cluster", "%clusterid", "%nclusterid",
    "%cluster_ctaid", "%cluster_nctaid", "%cluster_ctarank", "%cluster_nctarank",
    "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt",
    "%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo",
    "%globaltimer_hi", "%total_smem_size", "%aggr_smem_size", "%dynamic_smem_size",
    "%current_graph_exec", "%reserved_smem_offset_begin",
    "%reserved_smem_offset_end", "%reserved_smem_offset_cap",
    *(f"%envreg{i}" for i in range(32)),  # %envreg<32> (PTX ISA, Special Registers)
    *(f"%pm{i}" for i in range(8)), *(f"%pm{i}_64" for i in range(8)),  # performance monitors %pm0..7, %pm0_64..7_64
})

# --------------------------------------------------------------------------- vocabularies
TYPES = tuple(SCALAR_BITS)
SPACES = ("global", "shared", "shared::cta", "shared::cluster", "local", "param",
          "param::entry", "param::func", "const")
SEM = ("weak", "relaxed", "acquire", "release", "acq_rel", "volatile", "sc", "mmio")
SCOPE = ("cta", "cluster", "gpu", "sys")
CACHE = ("ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "unified",
         "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first", "L1::evict_last",
         "L1::no_allocate", "L2::evict_first", "L2::evict_last", "L2::evict_normal",
         "L2::evict_unchanged", "L2::cache_hint", "L2::64B", "L2::128B", "L2::256B")
VEC = ("v2", "v4", "v8")
FROUND = ("rn", "rz", "rm", "rp", "rna", "rs")
IROUND = ("rni", "rzi", "rmi", "rpi")
FFLAGS = ("ftz", "sat", "approx", "full", "relu", "NaN", "xorsign", "abs", "oob", "satfinite")
IMODE = ("lo", "hi", "wide", "cc")
CMP = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
       "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
BOOLOP = ("and", "or", "xor")
ATOMOP = ("add", "inc", "dec", "min", "max", "and", "or", "xor", "exch", "cas", "noftz")
ALIGNED = ("sync", "aligned", "uni")


OPS: dict[str, OpRow] = {}

ASYNC_SYNC = ("cp.async", "bulk.copy", "wgmma.mma")


def _effect(kw) -> str:
    if kw.get("proxy") == "async" or kw.get("sync") in ASYNC_SYNC:
        return "async"
    if kw.get("space") is not None and kw.get("proxy") == "generic":
        return "memory"
    if kw.get("sync"):
        return "sync"
    return "value" if kw.get("semantics") else "nop"


def row(mnemonic: str, operands: str, section: str, *forms, **kw) -> None:
    """One row. ``forms`` are ``Form`` values; bare modifier groups (strings, tuples of
    them) make the row's one permissive form."""
    if not forms or not all(isinstance(f, Form) for f in forms):
        assert not any(isinstance(f, Form) for f in forms), mnemonic
        forms = (loose(*forms),)
    kw.setdefault("effect", _effect(kw))
    assert kw["effect"] in EFFECTS, kw["effect"]
    assert kw.get("flow") in (None,) + FLOWS and kw.get("collective") in (None,) + COLLECTIVES
    OPS[mnemonic] = OpRow(mnemonic, operand_slots(operands), tuple(forms), section, **kw)


# --------------------------------------------------------------------------- check functions
def requires_type(instr) -> str | None:
    """The instruction names at least one operand type."""
    if not instr.types():
        return f"{instr.opcode}: a type modifier (.u32, .f32, ...) is required"
    return None


def mbarrier_shared_space(instr) -> str | None:
    """mbarrier objects live in .shared only (§9.7.13.15.1)."""
    bad = [m for m in instr.mods if m in ("global", "local", "param", "const")]
    if bad:
        return f"{instr.opcode}: an mbarrier object must be in .shared, not .{bad[0]}"
    return None


def mbarrier_remote_no_wait(instr) -> str | None:
    """Waits on a ``.shared::cluster`` (remote) barrier are not allowed (§9.7.13.15.16)."""
    if "shared::cluster" in instr.mods:
        return f"{instr.opcode}: test_wait/try_wait only operate on .shared::cta barriers"
    return None


def bulk_completion_mechanism(instr) -> str | None:
    """A bulk copy names exactly one completion mechanism (§9.7.9.25.4)."""
    mech = [m for m in instr.mods if m in ("mbarrier::complete_tx::bytes", "bulk_group")]
    if len(mech) != 1:
        return f"{instr.opcode}: exactly one of .mbarrier::complete_tx::bytes or .bulk_group is required"
    return None


def aligned_barrier(instr) -> bool:
    """A CTA barrier every thread must reach at the same instruction: ``bar`` always (it is
    ``barrier.aligned``), ``barrier`` with ``.aligned`` (§9.7.13.1)."""
    return instr.op == "bar" or "aligned" in instr.mods


def non_coherent(instr) -> bool:
    """A load through the non-coherent read-only path: ``ld.global.nc`` (§9.7.9.9) and ``ldu``
    (§9.7.9.10), valid only for data the kernel does not write."""
    return instr.op == "ldu" or (instr.op == "ld" and "nc" in instr.mods)


def cp_async_source(instr, reg_width) -> tuple:
    """``(src_size, ignore_src)`` operands of a ``cp.async`` (§9.7.9.25.3.1: ``[dst], [src],
    cp-size{, src-size}{, cache-policy}`` and ``... cp-size{, ignore-src}{, cache-policy}``),
    each ``None`` when absent. With ``.L2::cache_hint`` the last operand is the cache policy; a
    predicate register (``reg_width(name) == 1``) is ignore-src (true: zeros are copied, the
    source is not read), any other operand src-size (the bytes read, the rest zero-filled)."""
    ops = instr.operands[3:]
    if "L2::cache_hint" in instr.mods and ops:
        ops = ops[:-1]
    if not ops:
        return None, None
    x = ops[0]
    if getattr(x, "name", None) is not None and reg_width(x.name) == 1:
        return None, x
    return x, None


def wgmma_aligned(instr) -> str | None:
    if not {"sync", "aligned"} <= set(instr.mods):
        return f"{instr.opcode}: wgmma instructions are .sync.aligned"
    return None


# --------------------------------------------------------------------------- rows
S_INT = "9.7.1 integer-arithmetic-instructions"
S_FP = "9.7.3 floating-point-instructions"
S_HALF = "9.7.4 half-precision-floating-point-instructions"
S_CMP = "9.7.6 comparison-and-selection-instructions"
S_LOGIC = "9.7.8 logic-and-shift-instructions"
S_DATA = "9.7.9 data-movement-and-conversion-instructions"
S_CTRL = "9.7.12 control-flow-instructions"
S_SYNC = "9.7.13 parallel-synchronization-and-communication-instructions"
S_WGMMA = "9.7.15 asynchronous-warpgroup-level-matrix-instructions"
S_MMA = "9.7.14 warp-level-matrix-instructions"
S_MISC = "9.7.19 miscellaneous-instructions"

# Integer and floating-point arithmetic (§9.7.1, §9.7.2, §9.7.3, §9.7.4). The forms follow
# each instruction's syntax block in the ISA; ``sat``/``ftz`` are allowed on every type of a
# float form (the ISA restricts some of them per type, which ptxas reports).
INT = ("u16", "u32", "u64", "s16", "s32", "s64")
FLOAT = ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2")
RND = ("rn", "rz", "rm", "rp")
SAT, FTZ = mods("saturation", "sat"), mods("flush", "ftz")


def _int_form(*extra, types=INT) -> Form:
    return form("integer", mods("type", types, required=True), *extra)


def _float_form(*extra, rnd_required=False, types=FLOAT) -> Form:
    # ``most=2``: the mixed-precision forms (``add.f32.bf16``) name two types
    return form("floating-point", mods("rounding", RND, required=rnd_required), FTZ, SAT, *extra,
                mods("type", types, required=True, most=2))


def _cc_form(*extra) -> Form:
    """``add.cc``, ``sub.cc``, ``mad{.hi,.lo}.cc`` (§9.7.2): carry-out to CC.CF."""
    return form("carry-out", mods("carry", "cc", required=True), *extra,
                mods("type", ("u32", "s32", "u64", "s64"), required=True))


for m in ("add", "sub"):
    row(m, "def:d=t use:a=t use:b=t", f"{S_INT}-{m}", _int_form(SAT), _float_form(), _cc_form(),
        semantics=m)
row("mul", "def:d=w use:a=t use:b=t", f"{S_INT}-mul",
    _int_form(mods("mode", "hi", "lo", "wide", required=True)), _float_form(), semantics="mul")
row("mul24", "def:d=t use:a=t use:b=t", f"{S_INT}-mul24",
    _int_form(mods("mode", "hi", "lo", required=True), types=("u32", "s32")), semantics="mul24")
row("mad", "def:d=w use:a=t use:b=t use:c=w", f"{S_INT}-mad",
    _int_form(mods("mode", "hi", "lo", "wide", required=True), SAT),
    _float_form(), _cc_form(mods("mode", "hi", "lo", required=True)), semantics="mad")
row("mad24", "def:d=t use:a=t use:b=t use:c=t", f"{S_INT}-mad24",
    _int_form(mods("mode", "hi", "lo", required=True), SAT, types=("u32", "s32")), semantics="mad24")
row("sad", "def:d=t use:a=t use:b=t use:c=t", f"{S_INT}-sad", _int_form(), semantics="sad")
row("fma", "def:d=t use:a=t use:b=t use:c=t", f"{S_FP}-fma",
    _float_form(mods("relu", "relu"), mods("out-of-bounds", "oob"), rnd_required=True),
    semantics="fma")
row("div", "def:d=t use:a=t use:b=t", f"{S_INT}-div", _int_form(),
    form("floating-point", mods("rounding", RND, "approx", "full"), FTZ, mods("type", "f32", "f64", required=True)),
    semantics="div")
row("rem", "def:d=t use:a=t use:b=t", f"{S_INT}-rem", _int_form(), semantics="rem")
for m in ("min", "max"):
    row(m, "def:d=t use:a=t use:b=t use:c?=t", f"{S_INT}-{m}",
        _int_form(mods("relu", "relu")),
        form("floating-point", FTZ, mods("NaN", "NaN"), mods("xorsign", "xorsign"), mods("abs", "abs"),
             mods("type", FLOAT, required=True)), semantics=m)
for m in ("abs", "neg"):
    row(m, "def:d=t use:a=t", f"{S_INT}-{m}", _int_form(types=("s16", "s32", "s64")),
        form("floating-point", FTZ, mods("type", FLOAT, required=True)), semantics=m)
row("copysign", "def:d=t use:a=t use:b=t", f"{S_FP}-copysign",
    form("floating-point", mods("type", "f32", "f64", required=True)), semantics="copysign")
for m in ("addc", "subc"):
    row(m, "def:d=t use:a=t use:b=t", f"9.7.2 extended-precision-arithmetic-instructions-{m}",
        form("carry-in", mods("carry", "cc"), mods("type", ("u32", "s32", "u64", "s64"), required=True)),
        semantics=m)
row("madc", "def:d=t use:a=t use:b=t use:c=t", "9.7.2 extended-precision-arithmetic-instructions-madc",
    form("carry-in", mods("mode", "hi", "lo"), mods("carry", "cc"),
         mods("type", ("u32", "s32", "u64", "s64"), required=True)), semantics="madc")
# The remaining unary families (bit counts, transcendental approximations): their syntax
# varies by target and type, so one permissive form each.
for m in ("popc", "clz", "brev", "bfind", "not", "cnot", "rcp", "sqrt",
          "rsqrt", "sin", "cos", "lg2", "ex2", "tanh"):
    row(m, "def:d use:a", f"{S_FP}-{m}", TYPES, FROUND, FFLAGS, IMODE, "shiftamt", semantics=m,
        checks=(requires_type,))
row("testp", "def:d use:a", f"{S_FP}-testp", TYPES,
    ("finite", "infinite", "number", "notanumber", "normal", "subnormal"), semantics="testp")
row("bfe", "def:d use:a use:b use:c", f"{S_INT}-bfe", TYPES, semantics="bfe")
row("bfi", "def:d use:f use:b use:a use:c", f"{S_INT}-bfi", TYPES, semantics="bfi")
row("fns", "def:d use:mask use:base use:offset", f"{S_INT}-fns", TYPES, semantics="fns")
row("dp4a", "def:d use:a use:b use:c", f"{S_INT}-dp4a", TYPES, semantics="dp4a")
row("dp2a", "def:d use:a use:b use:c", f"{S_INT}-dp2a", TYPES, "lo", "hi", semantics="dp2a")
# Logic and shift (§9.7.8).
BITS = ("pred", "b16", "b32", "b64")
for m in ("and", "or", "xor"):  # the ISA lists .pred and .bN; integer types are let through
    row(m, "def:d=t use:a=t use:b=t", f"{S_LOGIC}-{m}", form("logic", mods("type", BITS, INT, required=True)),
        semantics=m)
for m in ("shl", "shr"):  # shr also takes signed and unsigned types (arithmetic / logical)
    row(m, "def:d=t use:a=t use:b=32", f"{S_LOGIC}-{m}",
        form("shift", mods("type", BITS[1:], INT, required=True)), semantics=m)
row("lop3", "def:d use:a use:b use:c use:immLut", f"{S_LOGIC}-lop3", TYPES, semantics="lop3")
row("shf", "def:d use:a use:b use:c", f"{S_LOGIC}-shf", TYPES, ("l", "r", "wrap", "clamp"), semantics="shf")
# Comparison and selection (§9.7.6).
row("setp", "def:p=1 use:a=t use:b=t use:c?=1", f"{S_CMP}-setp",
    form("compare", mods("comparison operator", CMP, required=True), mods("boolean operator", BOOLOP),
         FTZ, mods("type", TYPES, required=True)), semantics="setp")
row("set", "def:d=t use:a=t2 use:b=t2 use:c?=1", f"{S_CMP}-set",
    form("compare", mods("comparison operator", CMP, required=True), mods("boolean operator", BOOLOP),
         FTZ, mods("type", TYPES, required=True, most=2)), semantics="set")
row("selp", "def:d=t use:a=t use:b=t use:c=1", f"{S_CMP}-selp", TYPES, semantics="selp")
row("slct", "def:d use:a use:b use:c", f"{S_CMP}-slct", TYPES, "ftz", semantics="slct")
# Data movement and conversion (§9.7.9).
row("mov", "def:d=t use:a=t", f"{S_DATA}-mov", form("move", mods("type", TYPES, required=True)),
    semantics="mov")
row("cvt", "def:d use:a use:b?", f"{S_DATA}-cvt", TYPES, FROUND, IROUND, FFLAGS, semantics="cvt")
row("cvta", "def:d=t use:a=t", f"{S_DATA}-cvta", TYPES, SPACES, "to", semantics="cvta")
row("isspacep", "def:p use:a", f"{S_DATA}-isspacep", SPACES, semantics="isspacep")
row("prmt", "def:d use:a use:b use:c", f"{S_DATA}-prmt", TYPES, ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"), semantics="prmt")
def _memory_form(name, *extra) -> Form:
    """ld / st / atom / red: at most one state space, memory order and scope, any cache
    and eviction hints, one vector width and one type."""
    # ``.mmio`` goes with ``.relaxed.sys`` (ld.mmio.relaxed.sys.global): a slot of its own
    return form(name, mods("state space", SPACES), mods("memory order", tuple(x for x in SEM if x != "mmio")),
                mods("mmio", "mmio"), mods("scope", SCOPE),
                *extra, mods("cache hint", CACHE, most=None), mods("vector", VEC),
                mods("type", TYPES, required=True))


row("ld", "def:d=t load:a use:policy?=64", f"{S_DATA}-ld", _memory_form("load"),
    space="mods", proxy="generic")
row("ldu", "def:d load:a", f"{S_DATA}-ldu", TYPES, SPACES, VEC, space="mods", proxy="generic")
row("st", "store:a use:b=t use:policy?=64", f"{S_DATA}-st", _memory_form("store"),
    space="mods", proxy="generic")
# st.async / red.async: asynchronous (completed by complete-tx on an mbarrier), but the store or
# reduction itself is a weak (relaxed) generic-proxy memory operation (§9.7.9.12, §9.7.13.6)
row("st.async", "store:a use:b addr:mbar", f"{S_DATA}-st-async", TYPES, SEM, SCOPE, VEC,
    "shared::cluster", "mbarrier::complete_tx::bytes", space="shared::cluster", proxy="generic",
    effect="async", sync="mbarrier.complete_tx")
row("prefetch", "addr:a", f"{S_DATA}-prefetch", SPACES, ("L1", "L2", "tensormap",
    "L2::evict_last", "L2::evict_normal"), space="mods")
row("prefetchu", "addr:a", f"{S_DATA}-prefetchu", ("L1",))
row("createpolicy", "def:d use:a* ", f"{S_DATA}-createpolicy", TYPES,
    ("fractional", "range", "cvt", "L2::evict_last", "L2::evict_normal", "L2::evict_first",
     "L2::evict_unchanged", "global"), effect="value")
row("applypriority", "addr:a use:size", f"{S_DATA}-applypriority", ("global", "L2::evict_normal"))
row("discard", "addr:a use:size", f"{S_DATA}-discard", ("global", "L2"), effect="memory")
row("mapa", "def:d use:a use:b", f"{S_DATA}-mapa", TYPES, "shared::cluster", semantics="mapa")
row("getctarank", "def:d use:a", f"{S_DATA}-getctarank", TYPES, "shared::cluster", semantics="getctarank")
row("shfl", "def:d=32 use:a=32 use:b=32 use:c=32 use:membermask?=32", f"{S_DATA}-shfl-sync", TYPES,
    ("sync", "up", "down", "bfly", "idx"), sync="collective", collective="shuffle")
row("ldmatrix", "def:d load:a", f"{S_DATA}-ldmatrix", TYPES, ALIGNED, SPACES,
    ("m8n8", "m16n16", "m8n16", "x1", "x2", "x4", "trans", "b8x16.b6x16_p32", "b8x16.b4x16_p64"),
    space="mods", proxy="generic", sync="collective", collective="matrix")
row("stmatrix", "store:a use:b", f"{S_DATA}-stmatrix", TYPES, ALIGNED, SPACES,
    ("m8n8", "m16n8", "x1", "x2", "x4", "trans"), space="mods", proxy="generic", sync="collective",
    collective="matrix")
row("movmatrix", "def:d use:a", f"{S_DATA}-movmatrix", TYPES, ALIGNED, ("m8n8", "trans"), sync="collective",
    collective="matrix")
# Ampere cp.async (§9.7.9.25.3).
row("cp.async", "store:dst load:src use:size use:src_size? use:policy?", f"{S_DATA}-cp-async",
    ("ca", "cg", "shared", "shared::cta", "global"), CACHE, ("L2::cache_hint",),
    space="shared", proxy="generic", sync="cp.async")
row("cp.async.commit_group", "", f"{S_DATA}-cp-async-commit-group", sync="cp.async.commit")
row("cp.async.wait_group", "use:n", f"{S_DATA}-cp-async-wait-group", sync="cp.async.wait")
row("cp.async.wait_all", "", f"{S_DATA}-cp-async-wait-group", sync="cp.async.wait_all")
row("cp.async.mbarrier.arrive", "addr:mbar", f"{S_DATA}-cp-async-mbarrier-arrive",
    ("noinc", "shared", "shared::cta", "b64"), sync="cp.async.mbarrier.arrive")
# Bulk copies and the tensor copies (TMA) (§9.7.9.25.4, §9.7.9.27).
BULK = ("shared::cluster", "shared::cta", "shared", "global", "mbarrier::complete_tx::bytes",
        "bulk_group", "multicast::cluster", "L2::cache_hint", "cta_group::1", "cta_group::2",
        "cp_mask", "ignore_oob")
row("cp.async.bulk", "store:dst load:src use:size addr:mbar? use:ctaMask? use:policy?",
    f"{S_DATA}-cp-async-bulk", BULK, space="mods", proxy="async", sync="bulk.copy",
    checks=(bulk_completion_mechanism,))
TENSOR = BULK + ("1d", "2d", "3d", "4d", "5d", "tile", "im2col", "im2col_no_offs",
                 "tile::gather4", "tile::scatter4", "im2col::w", "im2col::w::128")
row("cp.async.bulk.tensor", "store:dst load:src addr:mbar? use:ctaMask? use:policy?",
    f"{S_DATA}-cp-async-bulk-tensor", TENSOR, space="mods", proxy="async", sync="bulk.copy",
    checks=(bulk_completion_mechanism,))
row("cp.reduce.async.bulk", "update:dst load:src use:size addr:mbar? use:policy?",
    f"{S_DATA}-cp-reduce-async-bulk", BULK, TYPES, ATOMOP, ("noftz",), space="mods",
    proxy="async", sync="bulk.copy")
row("cp.reduce.async.bulk.tensor", "update:dst load:src use:policy?",
    f"{S_DATA}-cp-reduce-async-bulk-tensor", TENSOR, ATOMOP, space="mods", proxy="async",
    sync="bulk.copy")
row("cp.async.bulk.prefetch", "addr:src use:size use:policy?", f"{S_DATA}-cp-async-bulk-prefetch",
    ("L2", "global", "L2::cache_hint"))
row("cp.async.bulk.prefetch.tensor", "addr:src use:policy?",
    f"{S_DATA}-cp-async-bulk-prefetch-tensor", TENSOR, "L2")
row("cp.async.bulk.commit_group", "", f"{S_DATA}-cp-async-bulk-commit-group", sync="bulk.commit")
row("cp.async.bulk.wait_group", "use:n", f"{S_DATA}-cp-async-bulk-wait-group", ("read",),
    sync="bulk.wait")
row("tensormap.replace", "addr:a use:b? use:c?", f"{S_DATA}-tensormap-replace",
    ("tile", "global_address", "rank", "box_dim", "global_dim", "global_stride",
     "element_stride", "elemtype", "interleave_layout", "swizzle_mode", "fill_mode",
     "global", "shared::cta", "b1024", "b32", "b64"), proxy="generic", effect="memory")
row("tensormap.cp_fenceproxy", "store:dst load:src use:size", f"{S_DATA}-tensormap-cp-fenceproxy",
    ("global", "shared::cta", "tensormap::generic", "release", "gpu", "sync", "aligned", "cta",
     "cluster", "sys"), sync="fence.proxy.tensormap")
# Control flow (§9.7.12).
row("bra", "target:L", f"{S_CTRL}-bra", ("uni",), effect="control", flow="branch")
row("brx.idx", "use:index target:table", f"{S_CTRL}-brx-idx", ("uni",), effect="control",
    flow="branch.indirect")
row("call", "use:ret? target:fn use:args*", f"{S_CTRL}-call", ("uni",), effect="control", flow="call")
row("ret", "", f"{S_CTRL}-ret", ("uni",), effect="control", flow="return")
row("exit", "", f"{S_CTRL}-exit", effect="control", flow="exit")
# Parallel synchronization and communication (§9.7.13).
BARMODS = ("sync", "arrive", "red", "aligned", "popc", "and", "or", "u32", "pred")
row("bar", "use:a use:b? use:c? use:d?", f"{S_SYNC}-bar", BARMODS, sync="bar")
row("barrier", "use:a use:b? use:c? use:d?", f"{S_SYNC}-bar", BARMODS, sync="bar")
row("bar.warp.sync", "use:membermask", f"{S_SYNC}-bar-warp-sync", sync="bar.warp.sync")
row("barrier.cluster", "", f"{S_SYNC}-barrier-cluster",
    ("arrive", "wait", "release", "relaxed", "acquire", "aligned"), sync="cluster.barrier")
row("membar", "", f"{S_SYNC}-membar", ("cta", "gl", "sys"), sync="fence")
row("fence", "", f"{S_SYNC}-membar", ("sc", "acq_rel", "acquire", "release"), SCOPE, sync="fence")
row("fence.proxy.async", "", f"{S_SYNC}-membar",
    ("shared::cta", "shared::cluster", "global"), sync="fence.proxy.async")
row("fence.proxy.async::generic", "", f"{S_SYNC}-membar",
    ("release", "acquire", "sync_restrict::shared::cta", "sync_restrict::shared::cluster", "cluster"),
    sync="fence.proxy.async")
row("fence.proxy.alias", "", f"{S_SYNC}-membar", sync="fence.proxy.alias")
row("fence.proxy.tensormap::generic", "addr:a? use:size?", f"{S_SYNC}-membar",
    ("release", "acquire"), SCOPE, sync="fence.proxy.tensormap")
row("fence.mbarrier_init", "", f"{S_SYNC}-membar", ("release", "cluster"), sync="fence.mbarrier_init")
ATOM_OP = mods("operation", tuple(x for x in ATOMOP if x != "noftz"), required=True)
row("atom", "def:d=t update:a use:b=t use:c?=t use:policy?=64", f"{S_SYNC}-atom",
    _memory_form("atomic", ATOM_OP, mods("flush", "noftz")), space="mods", proxy="generic",
    semantics="atom")
row("red", "update:a use:b=t use:policy?=64", f"{S_SYNC}-red",
    _memory_form("reduction", ATOM_OP, mods("flush", "noftz")), space="mods", proxy="generic",
    semantics="atom")
row("red.async", "update:a use:b addr:mbar", f"{S_SYNC}-red-async", TYPES, SEM, SCOPE, ATOMOP,
    "shared::cluster", "mbarrier::complete_tx::bytes", space="shared::cluster", proxy="generic",
    effect="async", sync="mbarrier.complete_tx")
row("vote", "def:d use:a=1 use:membermask?=32", f"{S_SYNC}-vote-sync",
    ("sync", "all", "any", "uni", "ballot", "pred", "b32"), sync="collective", collective="vote")
row("match", "def:d=32 use:a=t use:membermask=32", f"{S_SYNC}-match-sync",
    ("sync", "any", "all", "b32", "b64"), sync="collective", collective="match")
row("activemask", "def:d=32", f"{S_SYNC}-activemask", ("b32",), effect="value", collective="activemask")
row("redux", "def:d=t use:a=t use:membermask=32", f"{S_SYNC}-redux-sync",
    ("sync", "add", "min", "max", "and", "or", "xor", "u32", "s32", "b32", "f32", "abs", "NaN"),
    sync="collective", collective="reduce")
row("elect", "def:d use:membermask=32", f"{S_SYNC}-elect-sync", ("sync",), sync="collective",
    collective="elect")
row("griddepcontrol", "", f"{S_SYNC}-griddepcontrol", ("wait", "launch_dependents"),
    sync="griddepcontrol")
row("nanosleep", "use:t", f"{S_MISC}-nanosleep", ("u32",))
MB = ("shared", "shared::cta", "shared::cluster", "b64", "release", "relaxed", "acquire", "cta",
      "cluster")
row("mbarrier.init", "addr:a use:count", f"{S_SYNC}-mbarrier-init", MB, sync="mbarrier.init",
    checks=(mbarrier_shared_space,))
row("mbarrier.inval", "addr:a", f"{S_SYNC}-mbarrier-inval", MB, sync="mbarrier.inval",
    checks=(mbarrier_shared_space,))
row("mbarrier.arrive", "def:state=64 addr:a use:count?=32", f"{S_SYNC}-mbarrier-arrive", MB,
    "noComplete", "expect_tx", sync="mbarrier.arrive", checks=(mbarrier_shared_space,))
row("mbarrier.arrive_drop", "def:state=64 addr:a use:count?=32", f"{S_SYNC}-mbarrier-arrive-drop", MB,
    "noComplete", "expect_tx", sync="mbarrier.arrive_drop", checks=(mbarrier_shared_space,))
row("mbarrier.expect_tx", "addr:a use:tx", f"{S_SYNC}-mbarrier-expect-tx", MB,
    sync="mbarrier.expect_tx", checks=(mbarrier_shared_space,))
row("mbarrier.complete_tx", "addr:a use:tx", f"{S_SYNC}-mbarrier-complete-tx", MB,
    sync="mbarrier.complete_tx", checks=(mbarrier_shared_space,))
row("mbarrier.test_wait", "def:waitComplete=1 addr:a use:state=64", f"{S_SYNC}-mbarrier-test-wait-try-wait",
    MB, "parity", sync="mbarrier.wait", checks=(mbarrier_shared_space, mbarrier_remote_no_wait))
row("mbarrier.try_wait", "def:waitComplete=1 addr:a use:state=64 use:suspendTimeHint?=32",
    f"{S_SYNC}-mbarrier-test-wait-try-wait", MB, "parity", sync="mbarrier.wait",
    checks=(mbarrier_shared_space, mbarrier_remote_no_wait))
row("mbarrier.pending_count", "def:count use:state", f"{S_SYNC}-mbarrier-pending-count", ("b64",),
    effect="value")
# Warpgroup MMA (§9.7.15).
WG = ("sync", "aligned")
row("wgmma.fence", "", f"{S_WGMMA}-wgmma-fence", WG, sync="wgmma.fence", checks=(wgmma_aligned,))
row("wgmma.commit_group", "", f"{S_WGMMA}-wgmma-commit-group", WG, sync="wgmma.commit",
    checks=(wgmma_aligned,))
row("wgmma.wait_group", "use:n", f"{S_WGMMA}-wgmma-wait-group", WG, sync="wgmma.wait",
    checks=(wgmma_aligned,))
WGSHAPES = tuple(f"m64n{n}k{k}" for n in range(8, 257, 8) for k in (8, 16, 32, 64, 256))
row("wgmma.mma_async", "update:d load:a load:b use:rest*", f"{S_WGMMA}-wgmma-mma-async",
    WG, WGSHAPES, TYPES, ("sp", "satfinite"), space="shared", proxy="async", sync="wgmma.mma",
    checks=(wgmma_aligned,))
row("mma", "def:d use:a use:b use:c use:rest*", f"{S_MMA}-mma", WG, TYPES,
    ("m8n8k4", "m16n8k8", "m16n8k16", "m16n8k32", "m8n8k16", "m16n8k4", "m16n8k64",
     "m16n8k128", "m16n8k256", "m8n8k32", "m8n8k128", "row", "col", "satfinite", "sp",
     "sp::ordered_metadata", "kind::f8f6f4", "s4", "u4"), sync="collective", collective="mma")
row("setmaxnreg", "use:n", f"{S_MISC}-setmaxnreg", ("inc", "dec", "sync", "aligned", "u32"),
    sync="setmaxnreg")
row("trap", "", f"{S_MISC}-trap", effect="control", flow="trap")
row("brkpt", "", f"{S_MISC}-brkpt")
row("pmevent", "use:a", f"{S_MISC}-pmevent", ("mask",))

#: The group whose every thread must execute a ``.sync.aligned`` instruction that names no membermask,
#: by its row's ``sync`` (§9.7.14 mma, §9.7.9.15-17 ldmatrix/stmatrix/movmatrix: the warp;
#: §9.7.19.7 setmaxnreg: the warpgroup). A row with a membermask operand names its own group.
ALIGNED_COLLECTIVE = {"collective": "warp", "setmaxnreg": "warpgroup"}

#: Families in the table whose meaning the semantics models only as a synchronization or
#: memory effect; listed so the interpreter can refuse anything else by name.
SYNC_EFFECTS = frozenset(r.sync for r in OPS.values() if r.sync)
#: The ``sync`` effects of the mbarrier object (§9.7.13.15), completions by copies included.
MBARRIER_SYNC = frozenset(s for s in SYNC_EFFECTS if s.split(".")[0] == "mbarrier")

#: Every modifier some row's precise form names. A row without a permissive form rejects
#: one of these that none of its forms accepts; a word outside this vocabulary makes the
#: instruction opaque (a modifier the table does not know yet).
VOCABULARY = frozenset().union(*(r.mods for r in OPS.values()))

# Longest-prefix lookup over dotted components.
_BY_FIRST: dict[str, list] = {}
for _m in sorted(OPS, key=lambda m: -m.count(".")):
    _BY_FIRST.setdefault(_m.split(".")[0], []).append(_m)


def split_opcode(opcode: str) -> tuple[str, tuple, bool]:
    """``mbarrier.try_wait.parity.shared::cta.b64`` -> (``mbarrier.try_wait``,
    ``('parity', 'shared::cta', 'b64')``, supported). The family is the longest row
    mnemonic that is a dotted prefix; an opcode with no row keeps its first component as
    the family and is unsupported, as is one with a modifier the table does not know (for
    a permissive row: one the row does not list). Whether known modifiers go together is
    ``form_error``'s question."""
    parts = opcode.split(".")
    for m in _BY_FIRST.get(parts[0], ()):
        k = m.count(".") + 1
        if parts[:k] == m.split("."):
            mods = tuple(parts[k:])
            r = OPS[m]
            allowed = r.mods if r.permissive else VOCABULARY
            return m, mods, all(x in allowed for x in mods)
    return parts[0], tuple(parts[1:]), False


def form_error(family: str, mods: tuple) -> str | None:
    """The reason ``mods`` fit none of the forms of ``family``'s row, naming the conflict;
    ``None`` when they fit one (or the family has no row)."""
    r = OPS.get(family)
    if r is None:
        return None
    reasons = [f.misfit(mods) for f in r.forms]
    if None in reasons:
        return None
    stray = [m for m in mods if m not in r.mods]
    if stray:
        return f".{stray[0]} does not apply to {family}"
    if len(r.forms) > 1:  # two modifiers that no form has together
        for i, a in enumerate(mods):
            for b in mods[i + 1:]:
                if not any(a in f.vocabulary and b in f.vocabulary for f in r.forms):
                    return f".{a} and .{b} do not go together"
    # the form that holds every modifier, else the first
    whole = [x for f, x in zip(r.forms, reasons) if set(mods) <= f.vocabulary]
    return (whole or reasons)[0]


def check_instr(instr) -> list[str]:
    """Run the row's check functions; returns the messages of failed checks."""
    r = OPS.get(instr.op)
    if r is None:
        return []
    out = []
    why = form_error(instr.op, instr.mods)
    if why:
        out.append(f"{instr.opcode}: {why}")
    n = len(instr.operands)
    if n < r.min_operands or (r.max_operands is not None and n > r.max_operands):
        hi = "or more" if r.max_operands is None else f"to {r.max_operands}"
        out.append(f"{instr.opcode}: expected {r.min_operands} {hi} operands, got {n}")
    for chk in r.checks:
        msg = chk(instr)
        if msg:
            out.append(msg)
    return out


#: Rows whose ``load``/``update`` slots are registers, not addresses: wgmma's accumulator
#: fragment (``d``) and its shared-memory matrix descriptors (``a``, ``b``).
REGISTER_MEMORY_SLOTS = frozenset({"wgmma.mma_async"})


def effect_of(instr) -> str:
    """The ``effect`` column of an instruction's row; ``opaque`` for an instruction the table
    does not know or does not fully support."""
    r = OPS.get(instr.op)
    return r.effect if r is not None and instr.supported else "opaque"


def flow_of(instr) -> str | None:
    """The ``flow`` column: how a control instruction moves control (``None`` otherwise)."""
    r = OPS.get(instr.op)
    return r.flow if r is not None else None


#: calls nested deeper than this (recursion) are not followed: ``unknown`` with the reason
MAX_CALL_DEPTH = 64


def leaves_function(instr) -> bool:
    """``ret`` or ``exit``: control does not go on to the next statement of the function."""
    return flow_of(instr) in ("return", "exit")


def sync_of(instr) -> str | None:
    """The ``sync`` column: the synchronization effect (``mbarrier.wait``, ``bar``, ...)."""
    r = OPS.get(instr.op)
    return r.sync if r is not None else None


def proxy_fence_spaces(instr) -> list:
    """The state spaces (``global``, ``shared``) whose earlier generic-proxy accesses a
    ``fence.proxy.async`` orders before later async-proxy ones (§9.7.13.4): the one it names
    (``.global``, ``.shared::cta``, ``.shared::cluster``, or ``.sync_restrict::shared::*`` of the
    unidirectional ``::generic`` forms), else every one; none for the ``::generic.acquire`` form,
    which orders the other direction (async-proxy accesses before later generic ones)."""
    if instr.op == "fence.proxy.async::generic" and "acquire" in instr.mods:
        return []
    return sorted({"global" if x == "global" else "shared" for x in instr.mods
                   if x == "global" or x.endswith(("shared::cta", "shared::cluster"))}) or ["global", "shared"]


def semantics_of(instr) -> str | None:
    """The ``semantics`` column: the value-semantics family of a value instruction."""
    r = OPS.get(instr.op)
    return r.semantics if r is not None else None


def collective_of(instr) -> str | None:
    """The ``collective`` column: which warp-collective exchange an instruction makes."""
    r = OPS.get(instr.op)
    return r.collective if r is not None else None


def is_polling_wait(instr) -> bool:
    """``mbarrier.test_wait`` / ``try_wait``: a wait that returns whether the phase completed;
    its retry loop is one blocking wait."""
    return sync_of(instr) == "mbarrier.wait"


def memory_slot(instr) -> int | None:
    """Index of the operand an instruction reads or writes memory through."""
    r = OPS.get(instr.op)
    if r is None:
        return None
    return next((k for k, s in enumerate(r.operands) if s.access in ("load", "store", "update")), None)


def memory_access(instr) -> str | None:
    """``load``, ``store`` or ``update`` (read-modify-write): how a generic-proxy memory
    instruction (``effect`` memory) accesses memory through its memory slot."""
    r = OPS.get(instr.op)
    if r is None or r.effect != "memory":
        return None
    k = memory_slot(instr)
    return r.operands[k].access if k is not None else None


def param_access(instr) -> str | None:
    """``memory_access`` of an instruction that names the ``.param`` space (ld.param: load,
    st.param: store); ``None`` otherwise."""
    r = OPS.get(instr.op)
    if r is None or r.space != "mods" or "param" not in instr.mods:
        return None
    return memory_access(instr)


def space_of(instr) -> str | None:
    """The state space an instruction's memory operand lives in (``generic`` when a
    memory instruction names none)."""
    r = OPS.get(instr.op)
    if r is None or r.space is None:
        return None
    if r.space != "mods":
        return r.space
    for m in instr.mods:
        if m in SPACES:
            return "shared::cta" if m == "shared" else m
    return "generic"


def operand_bits(instr, slot_index: int) -> int | None:
    """The width in bits of operand ``slot_index`` where the row and the modifiers fix it:
    a slot's ``=N`` is N bits (``=1`` a predicate, ``=64`` a cache policy or mbarrier
    state); ``=t`` is the instruction's (first) type, ``=t2`` its second type (the source
    of ``set``, ``cvt``), ``=w`` the type doubled by ``.wide`` (``mul.wide``, ``mad.wide``).
    ``None`` when the width is not fixed (addresses, untyped operands, opaque ops); for a
    vector operand, the width of each element."""
    r = OPS.get(instr.op)
    if r is None or not instr.supported or not r.operands:
        return None
    slot = r.operands[min(slot_index, len(r.operands) - 1)]
    if slot_index >= len(r.operands) and not slot.variadic:
        return None
    b = slot.bits
    if b is None:
        return None
    if b.isdigit():
        return int(b)
    types = instr.types()
    if not types:
        return None
    if b == "t2":
        return SCALAR_BITS[types[-1]]
    bits = SCALAR_BITS[types[0]]
    return 2 * bits if b == "w" and "wide" in instr.mods else bits


CheckFn = Callable
