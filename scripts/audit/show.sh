#!/bin/sh
# Print cited lines of the pinned CUTLASS tree: show.sh <path-under-CuTeDSL>:L<a>[-L<b>] ...
cd "$(dirname "$0")/../../third_party/cutlass" || exit 1
for c in "$@"; do
  p=${c%%:L*}; r=${c#*:L}; a=${r%%-L*}; b=${r#*-L}; [ "$b" = "$r" ] && b=$a
  echo "== $c"; git show "HEAD:examples/python/CuTeDSL/$p" | sed -n "${a},${b}p" | cat -n | sed "s/^ *\([0-9]*\)/\1+$((a-1))/"
done
