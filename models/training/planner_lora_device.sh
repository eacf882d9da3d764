#!/usr/bin/env bash
# Train the planner's LoRA adapter on a lent GPU machine (the `device` tool), where
# the working tree arrives without the base GGUF: it travels beforehand in pieces
# of under 64 MiB as .w/c0 .. .w/cN (split -b 61000000 -d -a 1 BASE.gguf .w/c), the
# training pairs as .pd/pairs.jsonl.gz and the gguf wheel as .whl/. Results go to
# $OUT: the adapter in parts under 16 MiB, its config, the run's report and log.
# Nothing here is needed on a CPU machine: run models/training/planner_lora.py there.
set -euo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/base
cat $(ls .w/c* | sort -V) > /tmp/base/base.gguf
sha256sum /tmp/base/base.gguf
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
# the trainer saves the adapter before its held-out check: stop it in time to copy the files back
timeout "${TRAIN_SECONDS:-500}" python3 models/training/planner_lora.py --gguf /tmp/base/base.gguf --data .pd/pairs.jsonl.gz --out /tmp/run \
    "$@" 2>&1 | grep --line-buffered -v -e "Converting and de-quantizing" -e "Loading weights" | tee "$OUT/train.log" || true
cd /tmp/run/adapter || exit 1
split -b 15000000 -d -a 1 adapter_model.safetensors "$OUT/adapter_model.safetensors.part"
cp adapter_config.json training.json "$OUT/"
ls -la "$OUT"
