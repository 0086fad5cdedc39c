"""The kinds of knowledge-base file: where each lives, its required sections, its template.

The lint (lint.py), the `new` command and knowledge/README.md all follow these definitions.
"""

from __future__ import annotations

from dataclasses import dataclass

# Folders (relative to knowledge/) that hold patterns, with the catalog heading of each.
# languages/<lang>/{optimizations,anti-patterns} for any further language follow the same rule.
PATTERN_FOLDERS = {
    "optimizations": "Shared optimizations",
    "anti-patterns": "Shared anti-patterns",
    "languages/cute-dsl/optimizations": "CuTe DSL optimizations",
    "languages/cute-dsl/anti-patterns": "CuTe DSL anti-patterns",
}
READING_FOLDER = "reading"
DEVLOG_FOLDER = "kernels"

PATTERN_SECTIONS = (
    "When to Apply",
    "Mechanism",
    "Affected Metrics",
    "Implementation",
    "Source",
    "Performance Evidence",
    "Generalization",
    "Pitfalls",
    "Interactions",
)

RELATION_VERBS = ("confirms", "refines", "contradicts")


@dataclass(frozen=True)
class Required:
    title: str
    level: int
    parent: str | None = None  # the '##' heading a '###' section must sit under


READING_SECTIONS = (
    Required("Questions", 2),
    Required("Host side", 2),
    Required("TMA descriptors", 3, "Host side"),
    Required("Grid and cluster", 3, "Host side"),
    Required("SMEM budget", 3, "Host side"),
    Required("Launch parameters", 3, "Host side"),
    Required("Device side", 2),
    Required("Roles", 3, "Device side"),
    Required("Pipeline", 3, "Device side"),
    Required("TMA", 3, "Device side"),
    Required("MMA", 3, "Device side"),
    Required("Synchronization", 3, "Device side"),
    Required("SMEM layout", 3, "Device side"),
    Required("Pattern checklist", 2),
    Required("Cross-reference", 2),
)

# The request's pattern checklist: each item must be answered in "Pattern checklist".
CHECKLIST_ITEMS = (
    "TMA multi-stage pipeline",
    "Warpgroup specialization",
    "Persistent main loop",
    "Online softmax or streaming accumulation",
    "Register-level accumulator management",
    "SMEM swizzle",
    "Cluster communication",
    "Epilogue",
    "Boundary handling",
    "Pipeline drain",
)

DEVLOG_SECTIONS = ("Overview", "Source", "Performance", "Patterns Extracted", "Insights")


PATTERN_TEMPLATE = """\
# [Pattern name]

Relation: new

## When to Apply
- [CuTe DSL kernel type, workload shape, bottleneck condition]

## Mechanism
[How the pattern works in CuTe DSL: name the APIs.]

## Affected Metrics
- [Metric 1]
- [Metric 2]

## Implementation
<!-- snippet: knowledge/snippets/[entry-name].py -->
```python
# [A generalised CuTe DSL snippet, written here, never pasted from the example]
```

## Source
- [`path/under/examples/python/CuTeDSL.py:L<start>-L<end>`: what these lines do]

## Performance Evidence
Source: [example name, device, configuration]

| Config | Metric | Value | Context | Record |
|---|---|---|---|---|
| [config] | [metric] | pending | [device, clocks] | pending |

## Generalization
[What holds on any device or DSL]

## Pitfalls
- [A CuTe DSL specific way this goes wrong]

## Interactions
- [How this pattern interacts with other CuTe DSL patterns]
"""

READING_TEMPLATE = """\
# Reading notes: [example name]

Example: `{example}`
Commit: {commit}
Learning goal: [from knowledge/EXAMPLES.md]

## Questions
- [The questions written down before reading]

## Host side

### TMA descriptors
[Which tensors get a TMA descriptor, with what tile shape; cite lines]

### Grid and cluster
[How the grid is computed; is there a cluster; cite lines]

### SMEM budget
[How stage count and tile shape give the SMEM budget; cite lines]

### Launch parameters
[max_register_count, cluster shape, SMEM carveout; cite lines]

## Device side

### Roles
[How threads, warps, warpgroups get their roles; cite lines]

### Pipeline
[Stages, barrier init, producer and consumer loops; cite lines]

### TMA
[cute.copy with a TMA atom, arrival pattern; cite lines]

### MMA
[Accumulator setup, MMA loop body, epilogue; cite lines]

### Synchronization
[Barriers used and why; cite lines]

### SMEM layout
[Allocation, swizzle, partitioning across warpgroups; cite lines]

## Pattern checklist
| Pattern | Present | Where / notes |
|---|---|---|
| TMA multi-stage pipeline | [yes/no] | [stages, barriers per stage] |
| Warpgroup specialization | [yes/no] | [who produces, who consumes] |
| Persistent main loop | [yes/no] | [tile scheduling, exit condition] |
| Online softmax or streaming accumulation | [yes/no] | |
| Register-level accumulator management | [yes/no] | |
| SMEM swizzle | [yes/no] | |
| Cluster communication (DSMEM) | [yes/no] | |
| Epilogue (in registers, through SMEM, or fused) | [yes/no] | |
| Boundary handling (predicates, masks) | [yes/no] | |
| Pipeline drain | [yes/no] | |

## Cross-reference
- [confirms|refines|contradicts `<knowledge entry>`, or new: what this example adds]
"""

SNIPPET_TEMPLATE = '''"""[What this snippet shows.] Shown in {entry}."""

SM = "generic"  # or the target it is compiled for: "sm_90a", "sm_100a", ...
PENDING = "write the snippet: compile_snippet() (CPU) and, for generic or sm_90, check() (GPU)"

# snippet:begin
# [A generalised CuTe DSL snippet, written here, never pasted from the example]
# snippet:end


def compile_snippet():
    """CPU: compile the snippet's kernels for SM with fake tensors (or run its host code)."""


def check():
    """GPU (generic or sm_90 only): run it, compare with torch; return a one-line summary."""
'''

DEVLOG_TEMPLATE = """\
# {kernel} (imported from CUTLASS)

## Overview
[What this kernel does and why it was imported for study]

## Source
Original: `{example}`
Imported: `{imported}`

## Performance
| Config | Metric | Value | Context | Record |
|---|---|---|---|---|
| [config] | [metric] | pending | [device, clocks] | pending |

## Patterns Extracted
- pending

## Insights
- pending
"""
