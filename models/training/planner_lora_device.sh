#!/usr/bin/env bash
# Train the planner's LoRA adapter on a lent GPU machine (the `device` tool). The base
# GGUF (491 MB) is over what one call carries (64 MiB with the tree), and a carried path
# is gone at the next call, so it travels beforehand in pieces, each by its own call
# into /tmp, which lasts while the machine stays warm (30 s between calls):
#   here:   split -b 55000000 -d -a 1 BASE.gguf .w/c; for i in 0..8: mkdir .pI; ln .w/cI .pI/
#           (.w/, .p*/ and .whl/ in .git/info/exclude; the two committed adapters moved out of
#           the tree while the pieces travel, or the tree and a piece are over 64 MiB)
#   there:  one call a piece, carry [".pI"]: mkdir -p /tmp/w && cp .pI/* /tmp/w/
#   then:   carry [".whl"] (the gguf wheel): bash models/training/planner_lora_device.sh RUN...
# In session 62 the machine's start and nine pieces took 83 s of device time.
#
# Each argument is one run: a name, then planner_lora's options, e.g.
#   planner_lora_device.sh "all --top-layers 0 --epochs 2" "bal --top-layers 0 --balance 30 --epochs 3"
# Each run has FIT_SECONDS (default 200) from its start and cuts its schedule to what
# fits. Results go to $OUT as one archive in parts of 15 MB (every run's adapter,
# config and report, and the base's config and tokenizer that the conversion to GGUF
# needs as --base) and the log; what comes back is at most 64 MiB, so two runs of
# all 24 layers (35 MB each in fp32) are over it and need a second call for the
# last part (the archive stays in /tmp). Nothing here is needed on a CPU machine: run
# models/training/planner_lora.py there.
set -uo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
DATA=${DATA:-models/training/data/planner_pairs.jsonl.gz}
PIECES=${PIECES:-/tmp/w}
rm -rf /tmp/runs /tmp/runs.tgz  # a second call on a warm machine archives its own runs only
mkdir -p /tmp/base /tmp/runs
cat $(ls "$PIECES"/c* | sort -V) > /tmp/base/base.gguf
sha256sum /tmp/base/base.gguf | tee "$OUT/train.log"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>&1 | tee -a "$OUT/train.log"
for run in "$@"; do
    read -r name opts <<<"$run"
    echo "== run $name: $opts" | tee -a "$OUT/train.log"
    # shellcheck disable=SC2086
    timeout $(( ${FIT_SECONDS:-200} + 120 )) python3 models/training/planner_lora.py --gguf /tmp/base/base.gguf \
        --data "$DATA" --out "/tmp/runs/$name" --fit-seconds "${FIT_SECONDS:-200}" $opts 2>&1 \
        | grep --line-buffered -v -e "Converting and de-quantizing" -e "Loading weights" | tee -a "$OUT/train.log"
done
cd /tmp/runs || exit 1
first=$(ls | head -1)
tar czf /tmp/runs.tgz */adapter "$first/base"
split -b 15000000 -d -a 1 /tmp/runs.tgz "$OUT/runs.tgz.part"
ls -la "$OUT"
