set -u
ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl
export QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONUNBUFFERED=1
(cd .ab_f7 && PYTHONPATH=$ROOT/.ab_f7:/tmp/site python3 -c "import megakernel.build as b; b.load()") > $OUT/build_old.log 2>&1 &
PYTHONPATH=$ROOT:/tmp/site python3 -c "import megakernel.build as b; b.load()" > $OUT/build_new.log 2>&1
wait
for round in 1 2; do for side in old new; do
  dir=$ROOT; [ $side = old ] && dir=$ROOT/.ab_f7
  (cd $dir && PYTHONPATH=$dir:/tmp/site timeout 90 python3 $ROOT/.ab_f7/power_ab.py "$side $round" 20) 2>&1 | tail -1 | tee -a $OUT/power_ab.txt
done; done
rm -f tests/test_state_machine*.py
export PYTHONPATH=$ROOT:/tmp/site
timeout 300 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests -k "sanitizer and (initcheck or prefill)" > $OUT/sanitize_tests.log 2>&1
echo "sanitize exit $?"; tail -8 $OUT/sanitize_tests.log
