# per-launch duration of 20 consecutive decode launches (steady state: L2 warm, clocks free), f7e1ef1 vs this tree
set -u
ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl
export QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONUNBUFFERED=1
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
sed -i 's/range(8)/range(40)/' .ab_f7/ncu_step.py
(cd .ab_f7 && PYTHONPATH=$ROOT/.ab_f7:/tmp/site python3 -c "import megakernel.build as b; b.load()") > $OUT/build_old.log 2>&1 &
PYTHONPATH=$ROOT:/tmp/site python3 -c "import megakernel.build as b; b.load()" > $OUT/build_new.log 2>&1
wait
for round in 1 2; do for side in old new; do
  dir=$ROOT; [ $side = old ] && dir=$ROOT/.ab_f7
  (cd $dir && PYTHONPATH=$dir:/tmp/site timeout 120 $NCU --kernel-name regex:mk_decode --launch-skip 10 --launch-count 24 \
     --cache-control none --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
     python3 $ROOT/.ab_f7/ncu_step.py) > $OUT/warm_${side}_$round.csv 2>&1
  python3 - "$OUT/warm_${side}_$round.csv" "$side $round" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5 and r[-3] == "gpu__time_duration.sum"]
v = [float(r[-1].replace(",", "")) / 1000 for r in rows]
print(f"{sys.argv[2]}: {len(v)} launches, median {statistics.median(v):.2f} us, min {min(v):.2f}, max {max(v):.2f}")
PY
done; done
