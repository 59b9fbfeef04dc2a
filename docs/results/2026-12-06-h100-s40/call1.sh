#!/usr/bin/env bash
# Session 40, call 1: session 39's prepared call 2 (not run there: no machine), run unchanged as
# `bash docs/results/2026-12-06-h100-s39/call2.sh` (trees, runs and predictions in its header).
exec bash docs/results/2026-12-06-h100-s39/call2.sh
