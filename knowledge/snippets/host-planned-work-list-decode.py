"""Host-planned work list for decode (host code only): cut the pages of all sequences, laid
end to end, into `parts` equal ranges; each range's overlaps with the sequences are its
segments. compile_snippet() and check() exercise the plan on the CPU (no kernel here: the
device side is sketched in comments; the project's kernel is cited in the entry)."""

SM = "generic"

# snippet:begin
SEGMENT_COST = 2  # pages: Q load, pipeline fill, epilogue of one segment
COMBINE_COST = 1  # pages: the merge, when any sequence is cut


def plan(pages, parts, per):
    """Segments (seq, p0, p1, slot) of each part ([first, end) rows) for ranges of `per`
    pages over all sequences end to end; pieces[b] = segments of sequence b."""
    offs = [0]
    for n in pages:
        offs.append(offs[-1] + n)
    total, segs, part_rows = offs[-1], [], []
    for c in range(parts):
        lo, hi, first = c * per, min((c + 1) * per, total), len(segs)
        for b, n in enumerate(pages):
            a, e = max(lo, offs[b]), min(hi, offs[b + 1])
            if n and a < e:  # range c overlaps sequence b
                segs.append((b, a - offs[b], e - offs[b], a // per - offs[b] // per))
            elif n == 0 and min(offs[b] // per, parts - 1) == c:
                segs.append((b, 0, 0, 0))  # an empty sequence still needs O = 0, LSE = -inf
        part_rows.append((first, len(segs)))
    pieces = [(offs[b + 1] - 1) // per - offs[b] // per + 1 if n else 1
              for b, n in enumerate(pages)]  # fmt: skip
    return part_rows, segs, pieces


def cost(pages, parts, per):
    """The busiest part's pages + SEGMENT_COST per segment, + COMBINE_COST if a cut."""
    part_rows, segs, pieces = plan(pages, parts, per)
    busiest = max(sum(p1 - p0 for _, p0, p1, _ in segs[a:e]) + SEGMENT_COST * (e - a)
                  for a, e in part_rows)  # fmt: skip
    return busiest + (COMBINE_COST if max(pieces) > 1 else 0)


def choose_per(pages, parts):
    """Of the smallest `per` that fits, the next 64 and the smallest multiple of the longest
    sequence above them: the cheapest, ties to the larger (fewer cuts)."""
    low = max(1, -(-sum(pages) // parts))
    cands = set(range(low, low + 65)) | {-(-low // max(pages)) * max(pages)}
    return min(sorted(cands), key=lambda per: (cost(pages, parts, per), -per))


# Device side, in the @cute.kernel of one CTA per (m-tile, part), the plan as int32 rows:
#   lo, hi = mWork[part, 0], mWork[part, 1]
#   for seg in cutlass.range(lo, hi, unroll=1):          # a runtime loop over the segments
#       seq, p0, p1, slot = mWork[seg, 0], mWork[seg, 1], mWork[seg, 2], mWork[seg, 3]
#       issue pages p0, p0 + 1; load Q of seq; cute.arch.barrier(); reset acc, max, sum
#       page loop: stage s waits with parity (it % 2) ^ ph_s   (mbarriers never re-inited)
#       pieces[seq] > 1: fp32 O / base-2 LSE into workspace[slot, seq]; else O, LSE directly
#       cute.arch.barrier()                               # SMEM free for the next segment
#       ph0 ^= ((p1 - p0 + 1) // 2) % 2; ph1 ^= ((p1 - p0) // 2) % 2
# snippet:end


def _check_plan(pages, parts):
    per = choose_per(pages, parts)
    part_rows, segs, pieces = plan(pages, parts, per)
    assert -(-sum(pages) // per) <= parts
    seen = {b: [] for b in range(len(pages))}
    for a, e in part_rows:
        assert sum(p1 - p0 for _, p0, p1, _ in segs[a:e]) <= per
        for b, p0, p1, slot in segs[a:e]:
            seen[b].append((p0, p1, slot))
    for b, n in enumerate(pages):
        got = sorted(seen[b])
        if n == 0:
            assert got == [(0, 0, 0)], (b, got)
            continue
        assert [s for _, _, s in got] == list(range(pieces[b])), (b, got)
        assert got[0][0] == 0 and got[-1][1] == n
        assert all(got[i][1] == got[i + 1][0] for i in range(len(got) - 1))  # each page once
    return per, max(pieces)


def compile_snippet():
    assert _check_plan([64] * 128, 66) == (128, 1)  # equal lengths: cut between sequences
    assert _check_plan([64] * 32, 66)[1] == 2  # every sequence in two pieces
    return "plans for fixed lengths"


def check():
    import random

    rng = random.Random(0)
    for parts in (1, 3, 16, 66, 132):
        for pages in ([64, 0, 17, 1, 130, 0, 0, 64, 3], [0, 0, 5], [7, 0, 0], [1] * 40, [500],
                      [rng.randint(0, 140) for _ in range(32)]):  # fmt: skip
            if sum(pages):
                _check_plan(pages, parts)
    return "every page once, slots 0..pieces-1, empty sequences in one empty segment"
