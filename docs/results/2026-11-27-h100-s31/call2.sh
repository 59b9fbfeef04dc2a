#!/usr/bin/env bash
# Call 2: session 30's prepared script, run as written (its header holds the prediction; .ab_poll was branch
# variant-poller-warps at 7da30ce, carry [".whl", ".qla", ".ab_poll", "COMMIT"]).
exec bash docs/results/2026-11-27-h100-s30/next_call_poller_warps_tests.sh
