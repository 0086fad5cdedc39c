#!/bin/bash
# On the GPU host (it has ncu): export the SASS source page (per-instruction warp-stall samples)
# of every Nsight Compute report in a folder, for scripts/ncu_source_stalls.py here. Needs no
# Python packages and no staging:
#   OUT=$OUT bash scripts/device/ncu-source.sh FOLDER   # -> $OUT/ncu-source.tgz (*.csv.xz)
# The reports need the SourceCounters section (--set full collects it); .ncu-rep.xz is unpacked.
# PAGES="source details raw" adds each report's details page (every section's metrics, as the
# GUI's Details tab) and raw page (every collected metric) as NAME.details.csv.xz and
# NAME.raw.csv.xz; MATCH (a glob, default *) takes only the reports whose names match, e.g.
#   PAGES="details raw" MATCH='2026-12-02T18-56-32Z*' OUT=$OUT bash scripts/device/ncu-source.sh results/mla/mla-decode-sm90/ncu-reports
set -u
pages=${PAGES:-source}
match=${MATCH:-*}
[ -n "${pages// /}" ] || { echo "PAGES is empty: give source, details or raw" >&2; exit 2; }
for page in $pages; do
    case $page in
        source | details | raw) ;;
        *) echo "PAGES takes source, details and raw (got $page)" >&2; exit 2 ;;
    esac
done
dir=${1:?usage: ncu-source.sh FOLDER (with *.ncu-rep or *.ncu-rep.xz)}
: "${OUT:?set OUT to a folder}"
[ -d "$OUT" ] || { echo "OUT=$OUT is not a folder: create it first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
for f in "$dir"/$match.ncu-rep "$dir"/$match.ncu-rep.xz; do
    [ -e "$f" ] || continue
    base=$(basename "${f%.xz}" .ncu-rep)
    rep="$work/$base.ncu-rep"
    case $f in *.xz) xz -dc "$f" > "$rep" ;; *) cp "$f" "$rep" ;; esac
    for page in $pages; do
        case $page in
            source) out="$work/$base.csv"; args=(--page source --print-source sass) ;;
            details | raw) out="$work/$base.$page.csv"; args=(--page "$page") ;;
        esac
        if ncu --import "$rep" "${args[@]}" --csv > "$out" 2> "$work/$base.err"; then
            xz -9 "$out"
            n=$((n + 1))
            echo "$base $page: $(xz -dc "$out.xz" | wc -l) lines"
        else
            echo "$base $page: ncu --import failed: $(head -1 "$work/$base.err")" >&2
        fi
    done
    rm -f "$rep"
done
[ "$n" -gt 0 ] || { echo "no report matching $match exported from $dir" >&2; exit 1; }
rm -f "$work"/*.err
tar czf "$OUT/ncu-source.tgz" -C "$work" . || { echo "could not write $OUT/ncu-source.tgz" >&2; exit 1; }
echo "bundle: $OUT/ncu-source.tgz ($n page(s))"
