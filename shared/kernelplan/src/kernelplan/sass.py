"""SASS text parsing: per-function instruction histograms grouped for a kernel engineer.

Input is the text that ``cuobjdump -sass <cubin>`` or ``nvdisasm -c <cubin>`` prints;
nothing here runs a tool (see :mod:`kernelplan.static` for that).

The grouping of opcodes is one table, :data:`SASS_CATEGORIES`: an ordered mapping from
a category name to the opcode patterns it holds. An opcode is the mnemonic before its
first ``.`` (``HGMMA`` for ``HGMMA.64x128x16.F32``); patterns are ``fnmatch`` patterns
(``UTC*MMA*``) matched against it, and the first category that matches wins, so the
order of the table matters (``mma`` before ``tmem`` before ``uniform``). An opcode that
no pattern matches counts as ``other``. To regroup, edit the table: nothing else in the
code names an opcode except the local-memory byte count (``LDL``/``STL``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache

#: Category name -> opcode patterns (fnmatch, upper case). First match wins.
SASS_CATEGORIES: dict[str, tuple[str, ...]] = {
    # Tensor-core MMA: Hopper warpgroup GMMA (wgmma), Ampere-style warp MMA (mma.sync),
    # Blackwell tcgen05 UTC*MMA (UTCHMMA, UTCQMMA, UTCIMMA, UTCOMMA, ...).
    "mma": (
        "HGMMA",
        "QGMMA",
        "IGMMA",
        "BGMMA",
        "HMMA",
        "IMMA",
        "BMMA",
        "DMMA",
        "QMMA",
        "OMMA",
        "UTC*MMA*",
    ),
    # Tensor Memory Accelerator / bulk copies (cp.async.bulk[.tensor], prefetch, cache ctl).
    "tma": ("UTMALDG", "UTMASTG", "UTMAPF", "UTMAREDG", "UTMACCTL", "UTMACMDFLUSH", "UBLK*"),
    # Blackwell tensor memory and the other tcgen05 ops (alloc, commit, copy, shift).
    "tmem": ("LDTM", "STTM", "UTC*"),
    # Async-transaction barriers (mbarrier.*: SYNCS.ARRIVE.TRANS64, SYNCS.PHASECHK, ...).
    "mbarrier": ("SYNCS",),
    # CTA/warp/warpgroup barriers, memory fences and scoreboard waits.
    "bar": ("BAR", "WARPGROUP", "WARPSYNC", "MEMBAR", "FENCE", "ERRBAR", "DEPBAR", "CCTL*"),
    # Ampere cp.async (global -> shared without registers) and its commit.
    "ldgsts": ("LDGSTS", "LDGDEPBAR"),
    # ldmatrix / stmatrix.
    "ldsm_stsm": ("LDSM", "STSM"),
    # Other shared-memory traffic.
    "lds_sts": ("LDS", "STS", "LDSU", "ATOMS"),
    # Global / generic memory traffic.
    "ldg_stg": ("LDG", "STG", "LD", "ST", "ATOMG", "ATOM", "RED", "REDG", "REDAS", "LDGMC"),
    # Thread-local memory: register spills and local arrays.
    "local": ("LDL", "STL"),
    # Constant bank loads.
    "constant": ("LDC", "LDCU", "ULDC"),
    # FP32 SIMT math (FFMA2/FADD2/FMUL2 are the sm_100 paired forms).
    "fp32": (
        "FFMA",
        "FFMA2",
        "FMUL",
        "FMUL2",
        "FADD",
        "FADD2",
        "FMNMX",
        "FMNMX3",
        "FSETP",
        "FSET",
        "FSEL",
        "FCHK",
        "FSWZADD",
    ),
    # Packed half SIMT math (note: ptxas also uses HFMA2.MMA as a register move).
    "fp16x2": ("HFMA2", "HADD2", "HMUL2", "HMNMX2", "HSETP2", "HSET2"),
    # Special function unit (ex2, rcp, rsqrt, sin, ...).
    "mufu": ("MUFU",),
    # Type conversions and packing.
    "conversion": ("F2F", "F2FP", "I2F", "F2I", "I2I", "I2FP", "F2IP", "FRND", "I2IP"),
    # Integer / logic datapath.
    "integer": (
        "IMAD",
        "IMUL",
        "IADD",
        "IADD3",
        "VIADD",
        "LEA",
        "LOP",
        "LOP3",
        "SHF",
        "SHL",
        "SHR",
        "ISETP",
        "IMNMX",
        "VIMNMX",
        "VIMNMX3",
        "IABS",
        "POPC",
        "FLO",
        "BREV",
        "BMSK",
        "SGXT",
        "PRMT",
        "IDP",
        "IDP4A",
    ),
    # Uniform datapath (warp-uniform scalar ops: UIADD3, UMOV, ULEA, USHF, ...).
    "uniform": ("U*",),
    # Data movement between registers, predicates, special registers and lanes.
    "move": (
        "MOV",
        "SEL",
        "SHFL",
        "S2R",
        "S2UR",
        "CS2R",
        "R2UR",
        "P2R",
        "R2P",
        "PLOP3",
        "VOTE",
        "VOTEU",
        "MATCH",
        "REDUX",
        "ELECT",
        "CREDUX",
    ),
    # Control flow.
    "control": (
        "BRA",
        "BRX",
        "BRXU",
        "JMP",
        "JMX",
        "CALL",
        "RET",
        "EXIT",
        "BSSY",
        "BSYNC",
        "BREAK",
        "BPT",
        "KILL",
        "YIELD",
        "NANOSLEEP",
        "ACQBULK",
        "ACQSHMINIT",
        "ENDCOLLECTIVE",
        "PREEXIT",
        "NOP",
    ),
}

#: The category of an opcode that no pattern in :data:`SASS_CATEGORIES` matches.
OTHER = "other"

# One SASS instruction line, as both tools print it:
#   "        /*0080*/                   LDG.E R2, desc[UR6][R2.64] ;   /* 0x0000... */"
#   "        /*0050*/               @!P0 BRA 0x120;"
_INSN = re.compile(
    r"^\s*/\*(?P<addr>[0-9a-fA-F]+)\*/\s+"
    r"(?:\{\s*)?"
    r"(?:@!?U?P[T0-9]+\s+)?"
    r"(?P<mnem>[A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)"
    r"(?P<rest>[^;]*)"
)
_CUOBJDUMP_FUNC = re.compile(r"^\s*Function\s*:\s*(?P<name>\S+)\s*$")
_NVDISASM_FUNC = re.compile(r"^\.text\.(?P<name>\S+):\s*$")
_LABEL = re.compile(r"^(?P<label>\.L_[A-Za-z0-9_]+):\s*$")
_CODE_FOR = re.compile(r"^\s*(?:code for|\.target)\s+(?P<arch>sm_\w+)")


@lru_cache(maxsize=4096)
def categorize(opcode: str) -> str:
    """Category name of a SASS opcode (``"HGMMA"`` -> ``"mma"``); ``"other"`` if unknown.

    Accepts a full mnemonic too (``"HGMMA.64x128x16.F32"``): only the part before the
    first ``.`` is looked up.
    """
    base = opcode.split(".", 1)[0].upper()
    for category, patterns in SASS_CATEGORIES.items():
        for pattern in patterns:
            if fnmatchcase(base, pattern):
                return category
    return OTHER


def local_access_bytes(mnemonic: str) -> int:
    """Bytes one thread moves with one LDL/STL instruction, from its width modifier.

    ``STL`` -> 4, ``STL.64`` -> 8, ``STL.128`` -> 16, ``.U8``/``.S8`` -> 1,
    ``.U16``/``.S16`` -> 2.
    """
    mods = mnemonic.upper().split(".")[1:]
    for mod, size in (("128", 16), ("64", 8), ("U16", 2), ("S16", 2), ("U8", 1), ("S8", 1)):
        if mod in mods:
            return size
    return 4


@dataclass
class SassFunction:
    """Instructions of one function of a cubin.

    ``opcodes`` counts opcodes (mnemonic before the first ``.``); ``mnemonics`` counts
    full mnemonics (``HGMMA.64x128x16.F32``) of the ``mma`` category only, where the
    modifiers carry the instruction shape and types. Alignment padding after the last
    real instruction (``NOP``s, and the ``BRA`` to itself that ptxas puts after the final
    ``EXIT``) is not counted: ``padding`` says how many instructions were dropped.
    """

    name: str
    arch: str | None = None
    opcodes: Counter = field(default_factory=Counter)
    mnemonics: Counter = field(default_factory=Counter)
    local_store_bytes: int = 0
    local_load_bytes: int = 0
    padding: int = 0

    @property
    def instructions(self) -> int:
        """Number of counted instructions (padding excluded)."""
        return sum(self.opcodes.values())

    @property
    def categories(self) -> dict[str, int]:
        """Instruction count per category, in :data:`SASS_CATEGORIES` order, zeros kept."""
        totals = dict.fromkeys([*SASS_CATEGORIES, OTHER], 0)
        for opcode, count in self.opcodes.items():
            totals[categorize(opcode)] += count
        return totals


def _branch_target(rest: str, labels: dict[str, int]) -> int | None:
    rest = rest.strip()
    m = re.match(r"`?\(?(\.L_[A-Za-z0-9_]+)\)?", rest)
    if m:
        return labels.get(m.group(1))
    m = re.match(r"(0x[0-9a-fA-F]+)", rest)
    return int(m.group(1), 16) if m else None


def _finish(func: SassFunction, insns: list[tuple[int, str, str]], labels: dict[str, int]):
    # Drop alignment padding: trailing NOPs, then a trailing self-branch.
    end = len(insns)
    while end and insns[end - 1][1].split(".", 1)[0] == "NOP":
        end -= 1
    if end:
        addr, mnem, rest = insns[end - 1]
        if mnem.split(".", 1)[0] == "BRA" and _branch_target(rest, labels) == addr:
            end -= 1
    func.padding = len(insns) - end
    for _addr, mnem, _rest in insns[:end]:
        opcode = mnem.split(".", 1)[0]
        func.opcodes[opcode] += 1
        if categorize(opcode) == "mma":
            func.mnemonics[mnem] += 1
        if opcode == "STL":
            func.local_store_bytes += local_access_bytes(mnem)
        elif opcode == "LDL":
            func.local_load_bytes += local_access_bytes(mnem)


def parse_sass(text: str) -> dict[str, SassFunction]:
    """Parse ``cuobjdump -sass`` or ``nvdisasm -c`` output into functions by name.

    Raises ``ValueError`` when the text holds no function with instructions (so a change
    in the tools' format fails loudly instead of yielding empty histograms).
    """
    functions: dict[str, SassFunction] = {}
    arch: str | None = None
    current: SassFunction | None = None
    insns: list[tuple[int, str, str]] = []
    labels: dict[str, int] = {}
    pending_labels: list[str] = []

    def close():
        if current is not None:
            _finish(current, insns, labels)

    for line in text.splitlines():
        m = _CODE_FOR.match(line)
        if m:
            arch = m.group("arch")
            continue
        m = _CUOBJDUMP_FUNC.match(line) or _NVDISASM_FUNC.match(line)
        if m:
            close()
            current = functions.setdefault(m.group("name"), SassFunction(m.group("name"), arch))
            insns, labels, pending_labels = [], {}, []
            continue
        if current is None:
            continue
        m = _LABEL.match(line)
        if m:
            pending_labels.append(m.group("label"))
            continue
        m = _INSN.match(line)
        if m:
            addr = int(m.group("addr"), 16)
            for label in pending_labels:
                labels[label] = addr
            pending_labels = []
            insns.append((addr, m.group("mnem"), m.group("rest")))
    close()
    functions = {name: f for name, f in functions.items() if f.instructions or f.padding}
    if not functions:
        raise ValueError("no SASS function with instructions found in the disassembly text")
    return functions
