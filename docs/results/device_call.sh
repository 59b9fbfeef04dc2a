# Sourced by a session's device call scripts (docs/results/<session>/callN.sh), from the repository root on the device:
#   source docs/results/device_call.sh [--site]
# gives: $OUT/r (created; what a call writes goes there), $ROOT, SECONDS = 0, `pack` (r/ into $OUT/results.tgz: only a
# few files come back one by one), $OUT/r/device.txt, PYTHONUNBUFFERED=1, WORKBENCH_COMMIT (from ./COMMIT), and
#   in_tree SIDE LIMIT CMD...   CMD under `timeout LIMIT` in tree SIDE (new: this checkout; other names: .ab_<side>,
#                               a `git archive` of the tree to compare), with its own megakernel build folder
# --site: the carried wheels (.whl: fla) and FlashQLA's site (.qla) installed into /tmp/site, on PYTHONPATH.
OUT=${OUT:-gpu-results}
mkdir -p "$OUT/r"
ROOT=$PWD
SECONDS=0
export PYTHONUNBUFFERED=1 WORKBENCH_COMMIT=$(cat COMMIT 2>/dev/null || echo unknown)
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SITE=
if [ "${1:-}" = --site ]; then
  [ -d /tmp/site/flash_qla ] || {
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    for t in .qla/*.tar.xz; do tar -xJf "$t" -C /tmp/site; done
  }
  SITE=:/tmp/site
fi
export PYTHONPATH=$ROOT$SITE
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir
  shift 2
  dir=$(tree_of "$side")
  (cd "$dir" && QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel-$side \
    WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir$SITE timeout "$limit" "$@")
}
