#!/usr/bin/env bash
# Session 41 call 1: session 40's prepared call, run unchanged (setup as its header says)
bash docs/results/2026-12-06-h100-s40/next_call.sh
