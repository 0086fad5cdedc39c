#!/bin/bash
# Moves the small wheels (nvtx, pygments, pyyaml) out of .device/b (made by
# ../shared/gpu/prepare.sh) into .device/b2 with an installer, so that b plus the checkout stay
# under one transfer's 64 MiB as the tracked tree grows. On the host, after b's env.sh has
# installed the DSL: `bash .device/b2/install.sh`. Idempotent.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
mkdir -p .device/b2
for w in nvtx pygments pyyaml; do
    for f in .device/b/"$w"-*.whl; do [ -e "$f" ] && mv "$f" .device/b2/; done
done
cat > .device/b2/install.sh <<'SH'
#!/bin/bash
# wheels moved out of .device/b (scripts/device/split-b.sh); run after b's env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$(dirname "$0")"/*.whl && echo "b2: installed $(ls "$(dirname "$0")"/*.whl | wc -l) wheel(s)"
SH
du -sh .device/b .device/b2
