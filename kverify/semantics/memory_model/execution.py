"""Rules of execution and the memory model that no protocol owns: they are decided by the
interpreter's happens-before shadow (races), its memory accesses (bounds, uninitialized
reads), its run loop (deadlock, trap), its assertion calls (assert.failed), its indirect-branch handler (brx.idx index range, .uni), its call handler (a call through a pointer that holds no function) and its warp-collective
handlers (divergence); the
symbolic race checker reports the same race rules. Each is a ``kverify.rules.Rule``.

PTX ISA 9.0: §8 memory consistency model (data races, proxies), §9.7.9.25 asynchronous
copies, §5.1 state spaces, §9.7.12.4 brx.idx, §9.7.12.5 call, §9.7.13 synchronization, §9.7.19 trap.
"""
from __future__ import annotations

from kverify.rules import Rule

MCM = "memory-consistency-model"

RACE_SHARED = Rule(
    "race.shared", "§8 memory consistency model (data races, §8.9 ordering of memory operations)", MCM,
    "two accesses to the same shared-memory bytes, at least one a write, not ordered by happens-before "
    "(a barrier, an mbarrier phase, a fence with release/acquire)")
RACE_GLOBAL = Rule(
    "race.global", "§8 memory consistency model (data races, §8.9 ordering of memory operations)", MCM,
    "two accesses to the same global-memory bytes, at least one a write, not ordered by happens-before")
_SAME_VALUE = ("two writes to the same {} bytes, not ordered by happens-before, that always store the same "
               "value: a data race by the ISA's letter whose outcome does not depend on the order (GPUVerify "
               "tolerates it by default)")
RACE_SHARED_SAME_VALUE = Rule(
    "race.shared.same-value", "§8 memory consistency model (data races, §8.9 ordering of memory operations)", MCM,
    _SAME_VALUE.format("shared-memory"), severity="warning")
RACE_GLOBAL_SAME_VALUE = Rule(
    "race.global.same-value", "§8 memory consistency model (data races, §8.9 ordering of memory operations)", MCM,
    _SAME_VALUE.format("global-memory"), severity="warning")
RACE_GLOBAL_DEPENDENT_GRID = Rule(
    "race.global.dependent-grid", "§9.7.13 griddepcontrol (programmatic dependent launch); §8 memory consistency "
    "model", "parallel-synchronization-and-communication-instructions-griddepcontrol",
    "a grid launched as the programmatic dependent of another (PDL) accesses global-memory bytes the primary grid "
    "wrote (or writes bytes it read) before the thread's griddepcontrol.wait: the dependent may run alongside the "
    "primary, and launch_dependents orders no memory")
RACE_GLOBAL_NON_COHERENT = Rule(
    "race.global.non-coherent", "§9.7.9.9 ld.global.nc, §9.7.9.10 ldu; §8 memory consistency model",
    "data-movement-and-conversion-instructions-ld-global-nc",
    "ld.global.nc or ldu (the non-coherent read-only path: __ldg, const __restrict__) reads global bytes the launch "
    "already wrote: that cache is not kept coherent with writes, so the load may return the value from before "
    "the write whatever orders them (CUDA: data read through it must be read-only for the kernel's lifetime)")
RACE_ASYNC_PROXY = Rule(
    "race.async-proxy", "§8.6 proxies; §9.7.13.4 membar/fence (fence.proxy.async)",
    "parallel-synchronization-and-communication-instructions-membar",
    "a generic-proxy access and an async-proxy access (TMA, bulk copy, wgmma operand) to the same bytes "
    "without a fence.proxy.async between them")
RACE_ASYNC_PROXY_ISSUER_FENCE = Rule(
    "race.async-proxy.issuer-fence", "§8.6 proxies; §8.9.5 causality order; §9.7.13.4 membar/fence "
    "(fence.proxy.async)", "parallel-synchronization-and-communication-instructions-membar",
    "a generic-proxy write reaches an async-proxy access of the same bytes through synchronization and a "
    "fence.proxy.async in the issuing thread after it, not in the writing thread: the ISA says a proxy fence "
    "takes effect within a single thread and gives it no rule in the causality order; CUTLASS and the CUDA "
    "programming guide fence in every writer before the barrier", severity="warning")
RACE_ASYNC_PENDING = Rule(
    "race.async-pending", "§9.7.9.25 data movement: asynchronous copies (completion mechanisms)",
    "data-movement-and-conversion-instructions-cp-async",
    "an access to the source or destination of an asynchronous copy before its completion is observed "
    "(mbarrier phase, wait_group)")
BOUNDS = Rule(
    "bounds", "§5.1 state spaces", "state-spaces",
    "an access outside the memory its address can reach (a buffer of the launch, a shared variable, the "
    "local frame, a parameter)")
SHFL_UNDEFINED_SOURCE = Rule(
    "uninitialized.shfl-source", "§9.7.9.6 shfl.sync (a source lane inactive or not in membermask: the value "
    "is undefined)", "data-movement-and-conversion-instructions-shfl-sync",
    "shfl.sync with its source lane in range but inactive, exited or not in the membermask: the lane reads an "
    "undefined value")
MISALIGNED = Rule(
    "misaligned", "§6.4 addresses as operands (alignment)", "addresses-as-operands",
    "a load or store whose address is not a multiple of its access size (a vector access: of the whole vector)")
_DSMEM = "§9.7.13 barrier.cluster; CUDA C++ Programming Guide, distributed shared memory"
DSMEM_BEFORE_START = Rule(
    "dsmem.before-start", _DSMEM, "parallel-synchronization-and-communication-instructions-barrier-cluster",
    "an access to another CTA's shared memory (.shared::cluster: ld/st/atom, a remote mbarrier arrive, an async "
    "copy's destination) before anything shows that CTA has started: no cluster barrier wait, no synchronization "
    "with one of its threads")
DSMEM_AFTER_EXIT = Rule(
    "dsmem.after-exit", _DSMEM, "parallel-synchronization-and-communication-instructions-barrier-cluster",
    "an access to another CTA's shared memory that the owner's exit is not ordered after (happens-before: a "
    "release cluster barrier after the access, or an mbarrier wait the access's arrive completes): the owner may "
    "have exited, its shared memory gone, when the access happens")
UNINITIALIZED = Rule(
    "uninitialized", "§5.1 state spaces (shared and local memory are not initialized)", "state-spaces",
    "a read of shared or local memory no thread wrote before it")
UNINITIALIZED_REGISTER = Rule(
    "uninitialized.register", "§5.1.1 register state space (the ISA gives a register no initial value)",
    "state-spaces",
    "a value derived from a register no instruction wrote in that lane is stored to memory, or used as an address, a "
    "guard or branch condition, or an operand of a synchronization or asynchronous operation: the hardware register "
    "holds whatever earlier code left in it (the run reads it as 0)")
DIV_BY_ZERO = Rule(
    "arith.div-by-zero", "§9.7.1.8 div, §9.7.1.9 rem", "integer-arithmetic-instructions-div",
    "an integer div or rem executed with a divisor of 0: its result is unspecified (machine-specific); the run "
    "goes on with SMT-LIB's value (quotient all ones, remainder the dividend), which the GPU need not give")
TRAP = Rule(
    "trap", "§9.7.19.4 trap; brkpt", "miscellaneous-instructions-trap",
    "trap or brkpt executed: the launch aborts")
ASSERT_FAILED = Rule(
    "assert.failed", "the kernel's own assertions: CUDA assert() (__assertfail, the launch aborts); GPUVerify's "
    "__assert", "",
    "an assertion of the kernel (CUDA assert(), GPUVerify's __assert / __global_assert) is false for a thread of the "
    "launch")
DEADLOCK = Rule(
    "deadlock", "§9.7.13 parallel synchronization (barriers and waits that never complete)",
    "parallel-synchronization-and-communication-instructions",
    "threads block on a barrier, mbarrier phase or group wait that nothing left running can complete")
BARRIER_DIVERGENCE = Rule(
    "barrier.divergence", "§9.7.13.1 bar/barrier (.aligned); §9.7.15 wgmma (.sync.aligned)",
    "parallel-synchronization-and-communication-instructions-bar-barrier",
    "an .aligned or warp-collective instruction executed by only part of the threads that must execute it "
    "together")
BARRIER_ALIGNED_SPLIT = Rule(
    "barrier.aligned-split", "§9.7.13.1 bar/barrier (.aligned: all threads execute the same barrier "
    "instruction)", "parallel-synchronization-and-communication-instructions-bar-barrier",
    "one instance of a named barrier with a thread count completed by different .aligned barrier "
    "instructions (producer and consumer branches each with bar.sync ID, N): undefined by the ISA's "
    "letter for .aligned, a working idiom on current hardware", severity="warning")
BRANCH_INDEX_RANGE = Rule(
    "branch.index-range", "§9.7.12.4 brx.idx (index at or past the end of its .branchtargets list: "
    "undefined behaviour)", "control-flow-instructions-brx-idx",
    "brx.idx with an index not below the length of its .branchtargets target list (control goes to an "
    "undefined address)")
CALL_INVALID_TARGET = Rule(
    "call.invalid-target", "§9.7.12.5 call (an indirect call's target register must hold the address of a function "
    "of the call's prototype: any other value is undefined behaviour; CUDA faults on a null function pointer)",
    "control-flow-instructions-call",
    "a call through a register (a C++ function pointer) that holds no function's address: null, an integer, "
    "or an address past a function's entry")
BRANCH_UNIFORM = Rule(
    "branch.uni-divergence", "§9.7.12.4 brx.idx (.uni: all active threads of the warp have the same index)",
    "control-flow-instructions-brx-idx",
    "brx.idx.uni executed by active lanes of one warp with different index values (.uni promises a "
    "non-divergent branch)")
