#!/usr/bin/env bash
# The leaderboard's first entries (docs/leaderboard/): ragen-tiny on the local engine, the same model behind
# `ragen serve`'s OpenAI API (an API endpoint, as any hosted model would be evaluated), and the random and oracle
# policies as the floor and the ceiling, all on the same seeds. usage: scripts/leaderboard-entries.sh OUT_DIR
set -euo pipefail
out=${1:?usage: scripts/leaderboard-entries.sh OUT_DIR}
mkdir -p "$out"
cd "$(dirname "$0")/.."
ragen() { node bin/ragen.js "$@"; }
envs=SimpleSokoban,CoordFrozenLake,Bandit
common=(--env "$envs" --groups 32 --group-size 2 --seed 123 --temperature 0.5)
ragen eval "${common[@]}" --policy oracle --out "$out/oracle.jsonl"
ragen eval "${common[@]}" --policy random --out "$out/random.jsonl"
ragen eval "${common[@]}" --policy model --model ragen-tiny --out "$out/ragen-tiny.jsonl"
port=$((20000 + RANDOM % 20000))
ragen serve ragen-tiny --port "$port" --name ragen-tiny & server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 60); do curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break; sleep 1; done
ragen eval "${common[@]}" --policy openai --base-url "http://127.0.0.1:$port/v1" --model ragen-tiny --api completions \
  --tokenizer models/ragen-tiny --out "$out/ragen-tiny-api.jsonl"
ragen leaderboard "$out/ragen-tiny.jsonl" "ragen-tiny via ragen serve (OpenAI API)=$out/ragen-tiny-api.jsonl" \
  "random policy=$out/random.jsonl" "oracle (solver)=$out/oracle.jsonl" --out docs/leaderboard
