#!/bin/bash
# On the GPU host (it has ncu): export the SASS source page (per-instruction warp-stall samples)
# of every Nsight Compute report in a folder, for scripts/ncu_source_stalls.py here. Needs no
# Python packages and no staging:
#   OUT=$OUT bash scripts/device/ncu-source.sh FOLDER   # -> $OUT/ncu-source.tgz (*.csv.xz)
# The reports need the SourceCounters section (--set full collects it); .ncu-rep.xz is unpacked.
set -u
dir=${1:?usage: ncu-source.sh FOLDER (with *.ncu-rep or *.ncu-rep.xz)}
: "${OUT:?set OUT to a folder}"
work=$(mktemp -d)
n=0
for f in "$dir"/*.ncu-rep "$dir"/*.ncu-rep.xz; do
    [ -e "$f" ] || continue
    base=$(basename "${f%.xz}" .ncu-rep)
    rep="$work/$base.ncu-rep"
    case $f in *.xz) xz -dc "$f" > "$rep" ;; *) cp "$f" "$rep" ;; esac
    if ncu --import "$rep" --page source --csv --print-source sass > "$work/$base.csv" 2> "$work/$base.err"; then
        xz -9 "$work/$base.csv"
        n=$((n + 1))
        echo "$base: $(xz -dc "$work/$base.csv.xz" | wc -l) lines"
    else
        echo "$base: ncu --import failed: $(head -1 "$work/$base.err")" >&2
    fi
    rm -f "$rep"
done
[ "$n" -gt 0 ] || { echo "no report exported from $dir" >&2; exit 1; }
tar czf "$OUT/ncu-source.tgz" -C "$work" .
echo "bundle: $OUT/ncu-source.tgz ($n report(s))"
