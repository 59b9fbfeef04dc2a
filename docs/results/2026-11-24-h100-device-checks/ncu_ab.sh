# ncu of one decode launch (the 6th) of f7e1ef1 and of this tree: warp stall reasons, issue, duration
set -u
ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl
export QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONUNBUFFERED=1
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
(cd .ab_f7 && PYTHONPATH=$ROOT/.ab_f7:/tmp/site python3 -c "import megakernel.build as b; b.load()") > $OUT/build_old.log 2>&1 &
PYTHONPATH=$ROOT:/tmp/site python3 -c "import megakernel.build as b; b.load()" > $OUT/build_new.log 2>&1
wait
for side in old new; do
  dir=$ROOT; [ $side = old ] && dir=$ROOT/.ab_f7
  (cd $dir && PYTHONPATH=$dir:/tmp/site timeout 200 $NCU --kernel-name regex:mk_decode --launch-skip 5 --launch-count 1 \
     --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats --section LaunchStats \
     --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,gpu__time_duration.sum,smsp__inst_executed.sum" \
     --print-summary none python3 $ROOT/.ab_f7/ncu_step.py) > $OUT/ncu_$side.txt 2>&1
  echo "$side: exit $?"
done
for side in old new; do echo "---- $side"; grep -E "Duration|stalled|Issued Ipc|Warp Cycles Per Issued|No Eligible|Executed Instructions |inst_executed|exit" $OUT/ncu_$side.txt | grep -v "  0$" | head -40; done
