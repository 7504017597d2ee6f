#!/usr/bin/env bash
# What the executor's categorizer costs a replay (docs/categorizer.md): `simulate` of one
# history with and without `--categorizer`, side by side on one machine. The bar: with a
# realistic 20-category executor config (OOM, exit codes, message regexes, pod errors,
# events, a containerName), at most 1.3x the CPU of the replay without it.
#
#   scripts/bench-categorizer.sh [RUNS] [ROUNDS]   # default 1000000 3; needs python3, GNU time
#
# Wall and CPU (user + system; both cores are used) are the medians of ROUNDS rounds, the
# commands alternating within a round so that load hits them alike.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
rounds="${2:-3}"
. scripts/bench-common.sh
config="$dir/executor-config.yaml"
# 20 categories as an executor's config holds them: the common ones first, as operators
# write them, so that most runs match early and the rest try every rule.
cat >"$config" <<'YAML'
application:
  clusterId: bench
  errorCategories:
    enabled: true
    defaultCategory: uncategorized
    defaultSubcategory: unknown
    categories:
      - name: oom
        action: Delete
        rules:
          - onConditions: [OOMKilled]
            subcategory: kernel
            hint: Increase the memory request
          - containerName: main
            onExitCodes: {operator: In, values: [137]}
            subcategory: exit137
      - name: evicted
        action: Delete
        rules:
          - onConditions: [Evicted]
      - name: deadline
        rules:
          - onConditions: [DeadlineExceeded]
      - name: cuda_error
        action: Delete
        rules:
          - containerName: main
            onTerminationMessage: {pattern: "(?i)cuda.*error"}
            subcategory: transient
          - onTerminationMessage: {pattern: "CUBLAS_STATUS_[A-Z_]+"}
            subcategory: cublas
      - name: nccl
        action: Delete
        rules:
          - onTerminationMessage: {pattern: "NCCL (WARN|ERROR).*(timeout|unhandled system error)"}
      - name: gpu_unavailable
        action: Delete
        rules:
          - onPodEvents: {regexp: "Pod Allocate failed due to requested number of devices unavailable", reason: UnexpectedAdmissionError, type: Warning}
            subcategory: device_plugin
      - name: image
        action: Delete
        rules:
          - onPodError: {pattern: "(ErrImagePull|ImagePullBackOff|manifest unknown)"}
            subcategory: pull
          - onPodError: {pattern: "no match for platform in manifest"}
            subcategory: platform_mismatch
      - name: volume
        rules:
          - onPodError: {pattern: "(?i)unable to attach or mount volumes"}
          - onPodEvents: {regexp: "FailedMount", type: Warning}
      - name: node_failure
        action: Delete
        rules:
          - onPodEvents: {regexp: "(?i)node (is )?not ready", reason: NodeNotReady, type: Warning}
          - onPodError: {pattern: "(?i)node .* was lost"}
      - name: sigterm
        rules:
          - onExitCodes: {operator: In, values: [143]}
      - name: segfault
        rules:
          - onExitCodes: {operator: In, values: [139]}
          - onTerminationMessage: {pattern: "(?i)segmentation fault"}
      - name: python_error
        rules:
          - onTerminationMessage: {pattern: "Traceback \\(most recent call last\\)"}
          - onTerminationMessage: {pattern: "(ModuleNotFoundError|ImportError): "}
      - name: java_oom
        action: Delete
        rules:
          - onTerminationMessage: {pattern: "java\\.lang\\.OutOfMemoryError"}
      - name: disk_full
        action: Delete
        rules:
          - onTerminationMessage: {pattern: "(?i)no space left on device"}
      - name: network
        action: Delete
        rules:
          - onTerminationMessage: {pattern: "(?i)(connection (refused|reset)|i/o timeout|temporary failure in name resolution)"}
      - name: permission
        rules:
          - onTerminationMessage: {pattern: "(?i)permission denied"}
          - onExitCodes: {operator: In, values: [126]}
      - name: not_found
        rules:
          - onExitCodes: {operator: In, values: [127]}
      - name: sidecar
        rules:
          - containerName: log-shipper
            onExitCodes: {operator: NotIn, values: [0]}
      - name: init_failure
        rules:
          - containerName: init
            onExitCodes: {operator: NotIn, values: [0]}
      - name: user_error
        rules:
          - onExitCodes: {operator: In, values: [1, 2, 3, 64, 65, 66, 78]}
YAML
"$bin" validate -f "$config" >/dev/null
machine
file="$dir/h-$runs.jsonl"
python3 scripts/gen-histories.py "$runs" >"$file"
echo "== $runs runs, $(wc -l <"$file") jobs, $(du -m "$file" | cut -f1) MiB; 20 categories, $(grep -c -- '- on\|containerName' "$config") rules"
declare -A wall=() cpu=() rss=()
for _ in $(seq "$rounds"); do
    timed plain "$bin" simulate "${policies[@]}" --history "$file"
    timed categorized "$bin" simulate "${policies[@]}" --history "$file" --categorizer "$config"
done
grep -m1 'category changes' "$dir/out-categorized" || true
for name in plain categorized; do
    printf '%-12s %6ss wall (%s) %6ss CPU (%s) peak %s MiB\n' "$name" "$(median "${wall[$name]}")" \
        "${wall[$name]% }" "$(median "${cpu[$name]}")" "${cpu[$name]% }" "${rss[$name]}"
done
echo "ratio with --categorizer against without: $(ratio "$(median "${wall[categorized]}")" "$(median "${wall[plain]}")")x wall," \
    "$(ratio "$(median "${cpu[categorized]}")" "$(median "${cpu[plain]}")")x CPU (bar <= 1.3)"
