"""The op table: one row of pure data per PTX instruction family.

A row names the family's mnemonic (the dotted prefix of the opcode, e.g.
``mbarrier.try_wait``), the modifiers it accepts, its operand slots, the state space and
proxy of its memory access, its synchronization effect, the PTX ISA section it follows
(PTX ISA 9.0 numbering and the anchor of its page), and the name of its value semantics
(``kverify.semantics.values`` families) where it computes a value. Small named check functions
enforce modifier rules. The front end, printer, interpreter, verifiers and lowering all
read this table; an instruction that matches no row is an *opaque* op, marked unsupported.

Operand slots are written ``access:name`` with a trailing ``?`` when optional and ``*`` for
a variadic tail. Accesses: ``def`` (register written), ``use`` (value read), ``load`` /
``store`` / ``update`` (memory read / written / read-modify-written through an address),
``addr`` (an address that is not dereferenced: a barrier object, a tensor map),
``target`` (a branch target or callee).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .types import SCALAR_BITS

SPECIAL_REGISTERS = frozenset({
    "%tid", "%ntid", "%laneid", "%warpid", "%nwarpid", "%ctaid", "%nctaid", "%smid",
    "%nsmid", "%gridid", "%is_explicit_cluster", "%clusterid", "%nclusterid",
    "%cluster_ctaid", "%cluster_nctaid", "%cluster_ctarank", "%cluster_nctarank",
    "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt",
    "%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo",
    "%globaltimer_hi", "%total_smem_size", "%aggr_smem_size", "%dynamic_smem_size",
    "%current_graph_exec", "%envreg0", "%reserved_smem_offset_begin",
    "%reserved_smem_offset_end", "%reserved_smem_offset_cap", "%pm0", "%pm1", "%pm2",
    "%pm3",
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


@dataclass(frozen=True, slots=True)
class Slot:
    name: str
    access: str  # def | use | load | store | update | addr | target
    optional: bool = False
    variadic: bool = False


@dataclass(frozen=True, slots=True)
class OpRow:
    mnemonic: str
    operands: tuple  # of Slot
    mods: frozenset
    section: str
    space: str | None = None  # fixed space, "mods" (from a modifier), or None
    proxy: str | None = None  # generic | async | None (no memory access)
    sync: str | None = None  # synchronization effect, read by the protocol semantics
    semantics: str | None = None  # value-semantics family in semantics.values
    checks: tuple = ()  # named check functions (instr) -> str | None
    effect: str = "nop"  # one of EFFECTS: what the instruction does, for every analysis

    @property
    def min_operands(self) -> int:
        return sum(1 for s in self.operands if not s.optional and not s.variadic)

    @property
    def max_operands(self) -> int | None:
        return None if any(s.variadic for s in self.operands) else len(self.operands)


def _slots(spec: str) -> tuple:
    out = []
    for tok in spec.split():
        access, name = tok.split(":")
        opt, var = name.endswith("?"), name.endswith("*")
        out.append(Slot(name.rstrip("?*"), access, opt, var))
    return tuple(out)


OPS: dict[str, OpRow] = {}

#: The ``effect`` column. ``value``: computes registers only; ``memory``: a generic-proxy
#: access through an address (ld/st/atom/red, ldmatrix/stmatrix); ``async``: issues an
#: operation that completes later or acts in the async proxy (cp.async, bulk/tensor copies,
#: wgmma.mma_async, st.async, red.async); ``sync``: a barrier, fence, group, mbarrier or
#: warp-collective operation; ``control``: changes the flow of control; ``nop``: no effect
#: the semantics models (hints, sleeps); ``opaque``: an instruction with no row.
EFFECTS = ("value", "memory", "async", "sync", "control", "nop", "opaque")
ASYNC_SYNC = ("cp.async", "bulk.copy", "wgmma.mma")


def _effect(kw) -> str:
    if kw.get("proxy") == "async" or kw.get("sync") in ASYNC_SYNC:
        return "async"
    if kw.get("space") is not None and kw.get("proxy") == "generic":
        return "memory"
    if kw.get("sync"):
        return "sync"
    return "value" if kw.get("semantics") else "nop"


def row(mnemonic: str, operands: str, section: str, *mod_groups, **kw) -> None:
    mods = frozenset(m for g in mod_groups for m in (g if isinstance(g, tuple) else (g,)))
    kw.setdefault("effect", _effect(kw))
    assert kw["effect"] in EFFECTS, kw["effect"]
    OPS[mnemonic] = OpRow(mnemonic, _slots(operands), mods, section, **kw)


# --------------------------------------------------------------------------- check functions
def requires_type(instr) -> str | None:
    """The instruction names at least one operand type."""
    if not instr.types():
        return f"{instr.opcode}: a type modifier (.u32, .f32, ...) is required"
    return None


def at_most_one_space(instr) -> str | None:
    spaces = [m for m in instr.mods if m in SPACES]
    if len(spaces) > 1:
        return f"{instr.opcode}: more than one state space ({', '.join(spaces)})"
    return None


def setp_has_comparison(instr) -> str | None:
    if not any(m in CMP for m in instr.mods):
        return f"{instr.opcode}: a comparison operator (.eq, .lt, ...) is required"
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

ARITH = (TYPES, FROUND, FFLAGS, IMODE)
# Integer and floating-point arithmetic (§9.7.1, §9.7.3, §9.7.4).
for m in ("add", "sub", "min", "max", "copysign"):
    row(m, "def:d use:a use:b", f"{S_INT}-{m}", *ARITH, semantics=m, checks=(requires_type,))
for m in ("mul", "mul24", "div", "rem"):
    row(m, "def:d use:a use:b", f"{S_INT}-{m}", *ARITH, semantics=m, checks=(requires_type,))
for m in ("mad", "mad24", "fma", "sad"):
    row(m, "def:d use:a use:b use:c", f"{S_INT}-{m}", *ARITH, semantics=m, checks=(requires_type,))
for m in ("addc", "subc"):
    row(m, "def:d use:a use:b", f"9.7.2 extended-precision-arithmetic-instructions-{m}", TYPES, "cc", semantics=m)
row("madc", "def:d use:a use:b use:c", "9.7.2 extended-precision-arithmetic-instructions-madc", TYPES, "cc", "lo", "hi", semantics="madc")
for m in ("abs", "neg", "popc", "clz", "brev", "bfind", "not", "cnot", "rcp", "sqrt",
          "rsqrt", "sin", "cos", "lg2", "ex2", "tanh"):
    row(m, "def:d use:a", f"{S_FP}-{m}", *ARITH, "shiftamt", semantics=m, checks=(requires_type,))
row("testp", "def:d use:a", f"{S_FP}-testp", TYPES,
    ("finite", "infinite", "number", "notanumber", "normal", "subnormal"), semantics="testp")
row("bfe", "def:d use:a use:b use:c", f"{S_INT}-bfe", TYPES, semantics="bfe")
row("bfi", "def:d use:f use:b use:a use:c", f"{S_INT}-bfi", TYPES, semantics="bfi")
row("fns", "def:d use:mask use:base use:offset", f"{S_INT}-fns", TYPES, semantics="fns")
row("dp4a", "def:d use:a use:b use:c", f"{S_INT}-dp4a", TYPES, semantics="dp4a")
row("dp2a", "def:d use:a use:b use:c", f"{S_INT}-dp2a", TYPES, "lo", "hi", semantics="dp2a")
# Logic and shift (§9.7.8).
for m in ("and", "or", "xor", "shl", "shr"):
    row(m, "def:d use:a use:b", f"{S_LOGIC}-{m}", TYPES, semantics=m, checks=(requires_type,))
row("lop3", "def:d use:a use:b use:c use:immLut", f"{S_LOGIC}-lop3", TYPES, semantics="lop3")
row("shf", "def:d use:a use:b use:c", f"{S_LOGIC}-shf", TYPES, ("l", "r", "wrap", "clamp"), semantics="shf")
# Comparison and selection (§9.7.6).
row("setp", "def:p use:a use:b use:c?", f"{S_CMP}-setp", TYPES, CMP, BOOLOP, "ftz",
    semantics="setp", checks=(requires_type, setp_has_comparison))
row("set", "def:d use:a use:b use:c?", f"{S_CMP}-set", TYPES, CMP, BOOLOP, "ftz", semantics="set")
row("selp", "def:d use:a use:b use:c", f"{S_CMP}-selp", TYPES, semantics="selp")
row("slct", "def:d use:a use:b use:c", f"{S_CMP}-slct", TYPES, "ftz", semantics="slct")
# Data movement and conversion (§9.7.9).
row("mov", "def:d use:a", f"{S_DATA}-mov", TYPES, semantics="mov", checks=(requires_type,))
row("cvt", "def:d use:a use:b?", f"{S_DATA}-cvt", TYPES, FROUND, IROUND, FFLAGS, semantics="cvt")
row("cvta", "def:d use:a", f"{S_DATA}-cvta", TYPES, SPACES, "to", semantics="cvta")
row("isspacep", "def:p use:a", f"{S_DATA}-isspacep", SPACES, semantics="isspacep")
row("prmt", "def:d use:a use:b use:c", f"{S_DATA}-prmt", TYPES, ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"), semantics="prmt")
row("ld", "def:d load:a use:policy?", f"{S_DATA}-ld", TYPES, SPACES, SEM, SCOPE, CACHE, VEC,
    space="mods", proxy="generic", checks=(requires_type, at_most_one_space))
row("ldu", "def:d load:a", f"{S_DATA}-ldu", TYPES, SPACES, VEC, space="mods", proxy="generic")
row("st", "store:a use:b use:policy?", f"{S_DATA}-st", TYPES, SPACES, SEM, SCOPE, CACHE, VEC,
    space="mods", proxy="generic", checks=(requires_type, at_most_one_space))
row("st.async", "store:a use:b addr:mbar", f"{S_DATA}-st-async", TYPES, SEM, SCOPE, VEC,
    "shared::cluster", "mbarrier::complete_tx::bytes", space="shared::cluster", proxy="async",
    sync="mbarrier.complete_tx")
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
row("shfl", "def:d use:a use:b use:c use:membermask?", f"{S_DATA}-shfl-sync", TYPES,
    ("sync", "up", "down", "bfly", "idx"), sync="collective")
row("ldmatrix", "def:d load:a", f"{S_DATA}-ldmatrix", TYPES, ALIGNED, SPACES,
    ("m8n8", "m16n16", "m8n16", "x1", "x2", "x4", "trans", "b8x16.b6x16_p32", "b8x16.b4x16_p64"),
    space="mods", proxy="generic", sync="collective")
row("stmatrix", "store:a use:b", f"{S_DATA}-stmatrix", TYPES, ALIGNED, SPACES,
    ("m8n8", "m16n8", "x1", "x2", "x4", "trans"), space="mods", proxy="generic", sync="collective")
row("movmatrix", "def:d use:a", f"{S_DATA}-movmatrix", TYPES, ALIGNED, ("m8n8", "trans"), sync="collective")
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
row("bra", "target:L", f"{S_CTRL}-bra", ("uni",), effect="control")
row("brx.idx", "use:index target:table", f"{S_CTRL}-brx-idx", ("uni",), effect="control")
row("call", "use:ret? target:fn use:args*", f"{S_CTRL}-call", ("uni",), effect="control")
row("ret", "", f"{S_CTRL}-ret", ("uni",), effect="control")
row("exit", "", f"{S_CTRL}-exit", effect="control")
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
row("atom", "def:d update:a use:b use:c? use:policy?", f"{S_SYNC}-atom", TYPES, SPACES, SEM,
    SCOPE, ATOMOP, VEC, CACHE, space="mods", proxy="generic", semantics="atom")
row("red", "update:a use:b use:policy?", f"{S_SYNC}-red", TYPES, SPACES, SEM, SCOPE, ATOMOP,
    VEC, CACHE, space="mods", proxy="generic", semantics="atom")
row("red.async", "update:a use:b addr:mbar", f"{S_SYNC}-red-async", TYPES, SEM, SCOPE, ATOMOP,
    "shared::cluster", "mbarrier::complete_tx::bytes", space="shared::cluster", proxy="async",
    sync="mbarrier.complete_tx")
row("vote", "def:d use:a use:membermask?", f"{S_SYNC}-vote-sync",
    ("sync", "all", "any", "uni", "ballot", "pred", "b32"), sync="collective")
row("match", "def:d use:a use:membermask", f"{S_SYNC}-match-sync", ("sync", "any", "all", "b32", "b64"),
    sync="collective")
row("activemask", "def:d", f"{S_SYNC}-activemask", ("b32",), effect="value")
row("redux", "def:d use:a use:membermask", f"{S_SYNC}-redux-sync",
    ("sync", "add", "min", "max", "and", "or", "xor", "u32", "s32", "b32", "f32", "abs", "NaN"),
    sync="collective")
row("elect", "def:d use:membermask", f"{S_SYNC}-elect-sync", ("sync",), sync="collective")
row("griddepcontrol", "", f"{S_SYNC}-griddepcontrol", ("wait", "launch_dependents"),
    sync="griddepcontrol")
row("nanosleep", "use:t", f"{S_MISC}-nanosleep", ("u32",))
MB = ("shared", "shared::cta", "shared::cluster", "b64", "release", "relaxed", "acquire", "cta",
      "cluster")
row("mbarrier.init", "addr:a use:count", f"{S_SYNC}-mbarrier-init", MB, sync="mbarrier.init",
    checks=(mbarrier_shared_space,))
row("mbarrier.inval", "addr:a", f"{S_SYNC}-mbarrier-inval", MB, sync="mbarrier.inval",
    checks=(mbarrier_shared_space,))
row("mbarrier.arrive", "def:state addr:a use:count?", f"{S_SYNC}-mbarrier-arrive", MB,
    "noComplete", "expect_tx", sync="mbarrier.arrive", checks=(mbarrier_shared_space,))
row("mbarrier.arrive_drop", "def:state addr:a use:count?", f"{S_SYNC}-mbarrier-arrive-drop", MB,
    "noComplete", "expect_tx", sync="mbarrier.arrive_drop", checks=(mbarrier_shared_space,))
row("mbarrier.expect_tx", "addr:a use:tx", f"{S_SYNC}-mbarrier-expect-tx", MB,
    sync="mbarrier.expect_tx", checks=(mbarrier_shared_space,))
row("mbarrier.complete_tx", "addr:a use:tx", f"{S_SYNC}-mbarrier-complete-tx", MB,
    sync="mbarrier.complete_tx", checks=(mbarrier_shared_space,))
row("mbarrier.test_wait", "def:waitComplete addr:a use:state", f"{S_SYNC}-mbarrier-test-wait-try-wait",
    MB, "parity", sync="mbarrier.wait", checks=(mbarrier_shared_space, mbarrier_remote_no_wait))
row("mbarrier.try_wait", "def:waitComplete addr:a use:state use:suspendTimeHint?",
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
     "sp::ordered_metadata", "kind::f8f6f4"), sync="collective")
row("setmaxnreg", "use:n", f"{S_MISC}-setmaxnreg", ("inc", "dec", "sync", "aligned", "u32"),
    sync="setmaxnreg")
row("trap", "", f"{S_MISC}-trap", effect="control")
row("brkpt", "", f"{S_MISC}-brkpt")
row("pmevent", "use:a", f"{S_MISC}-pmevent", ("mask",))

#: Families in the table whose meaning the semantics models only as a synchronization or
#: memory effect; listed so the interpreter can refuse anything else by name.
SYNC_EFFECTS = frozenset(r.sync for r in OPS.values() if r.sync)

# Longest-prefix lookup over dotted components.
_BY_FIRST: dict[str, list] = {}
for _m in sorted(OPS, key=lambda m: -m.count(".")):
    _BY_FIRST.setdefault(_m.split(".")[0], []).append(_m)


def split_opcode(opcode: str) -> tuple[str, tuple, bool]:
    """``mbarrier.try_wait.parity.shared::cta.b64`` -> (``mbarrier.try_wait``,
    ``('parity', 'shared::cta', 'b64')``, supported). The family is the longest row
    mnemonic that is a dotted prefix; an opcode with no row keeps its first component as
    the family and is unsupported, as is one with a modifier the row does not list."""
    parts = opcode.split(".")
    for m in _BY_FIRST.get(parts[0], ()):
        k = m.count(".") + 1
        if parts[:k] == m.split("."):
            mods = tuple(parts[k:])
            allowed = OPS[m].mods
            return m, mods, all(x in allowed for x in mods)
    return parts[0], tuple(parts[1:]), False


def check_instr(instr) -> list[str]:
    """Run the row's check functions; returns the messages of failed checks."""
    r = OPS.get(instr.op)
    if r is None:
        return []
    out = []
    n = len(instr.operands)
    if n < r.min_operands or (r.max_operands is not None and n > r.max_operands):
        hi = "or more" if r.max_operands is None else f"to {r.max_operands}"
        out.append(f"{instr.opcode}: expected {r.min_operands} {hi} operands, got {n}")
    for chk in r.checks:
        msg = chk(instr)
        if msg:
            out.append(msg)
    return out


def effect_of(instr) -> str:
    """The ``effect`` column of an instruction's row; ``opaque`` for an instruction the table
    does not know or does not fully support."""
    r = OPS.get(instr.op)
    return r.effect if r is not None and instr.supported else "opaque"


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


CheckFn = Callable
