#!/usr/bin/env bash
# Install traincost in a virtual environment, then run one of its jobs, saying what it does as it goes.
#
#   scripts/setup.sh quick      install, run the quick config (config/quick.yaml), write results/report.html
#   scripts/setup.sh tests      install, run the default test suite (the heavy `slow` tests are left out)
#   scripts/setup.sh full       install, run the full reproduction (config/config.yaml), write results/report.html
#   scripts/setup.sh install    install only
#
# Options, before the job:
#   --python PY   the interpreter the venv is made with (default python3; Python 3.11 to 3.13)
#   --venv DIR    the venv (default .venv; an existing one is reused and brought to constraints.txt)
#   --cores N     cores for Snakemake and pytest (default 2)
#   --dry-run     print each step's command without running it
#
# Every package is installed at the version constraints.txt pins, as CI installs it, with pip's own progress (pip
# reads PIP_EXTRA_INDEX_URL: https://download.pytorch.org/whl/cpu gives torch's CPU build, where PyPI has CUDA's). On
# Python 3.11 the `ort` extra comes too: ONNX Runtime Training, the onnx front end that the papers' workloads use
# (MONET's method). Its last release has no wheels past Python 3.11, so on 3.12 and 3.13 the script installs without
# it, says so, and runs the workflow with every workload on the torch front end (--config frontend=torch) and the
# tests not marked `ort`.
set -euo pipefail
cd "$(dirname "$0")/.."

python=python3 venv=.venv cores=2 dry=false
usage() { sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --python) python=$2; shift 2 ;;
    --venv) venv=$2; shift 2 ;;
    --cores) cores=$2; shift 2 ;;
    --dry-run) dry=true; shift ;;
    -h|--help) usage ;;
    -*) echo "setup: unknown option $1" >&2; usage 2 >&2 ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || usage 2 >&2
job=$1
case $job in quick | tests | full | install) ;; *) echo "setup: unknown job '$job' (quick, tests, full or install)" >&2; exit 2 ;; esac

start=$SECONDS
case $job in install) count=3 ;; tests) count=4 ;; *) count=5 ;; esac
number=0
step() {  # step "what it does" command...: print the step and its command, run it, say how long it took
  local what=$1; shift
  number=$((number + 1))
  local shown="$*"
  printf '\n==> [%d/%d] %s\n    $ %s\n' "$number" "$count" "$what" "${shown#watched }"
  $dry && return 0
  local began=$SECONDS
  "$@"
  printf '==> [%d/%d] done in %ds (%ds in all)\n' "$number" "$count" $((SECONDS - began)) $((SECONDS - start))
}

version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || { echo "setup: no $python" >&2; exit 2; }
case $version in
  3.11) extras=test,ort frontend=() marks=() ;;
  3.12|3.13)
    extras=test frontend=(--config frontend=torch) marks=(-m "not slow and not ort")
    echo "setup: Python $version: installing without the ort extra (ONNX Runtime Training has no wheels past 3.11);"
    echo "       the workflow runs every workload on the torch front end (--config frontend=torch)" ;;
  *) echo "setup: Python $version: traincost needs Python 3.11, 3.12 or 3.13 (--python PY)" >&2; exit 2 ;;
esac

if [ -x "$venv/bin/python" ]; then
  step "reuse the virtual environment $venv ($("$venv/bin/python" --version))" true
else
  step "create the virtual environment $venv with Python $version" "$python" -m venv "$venv"
fi
# pip prints each package it downloads, then nothing while it unpacks them (torch is most of the minutes): a
# line every 30 s says how much of the venv is written
watched() {  # watched command...: run it, printing the venv's size every 30 s until it ends
  local began=$SECONDS watcher
  (while sleep 30; do printf '    ... %s written to %s (%ds)\n' "$(du -sh "$venv" 2>/dev/null | cut -f1)" "$venv" \
    $((SECONDS - began)); done) &
  watcher=$!
  "$@" || { kill "$watcher"; return 1; }
  kill "$watcher"
}
step "install traincost[$extras] at the versions of constraints.txt (a few minutes; about 3 GB)" \
  watched "$venv/bin/python" -m pip install -c constraints.txt -e ".[$extras]"
# pip compiles what it installs, not an editable project's own modules: each job of a run would compile them again
# where the environment stops Python from writing its caches (PYTHONDONTWRITEBYTECODE), about 0.2 s of every start
step "compile traincost's modules" "$venv/bin/python" -m compileall -q src
export PATH="$PWD/$venv/bin:$PATH"
case $job in
  install) ;;
  tests) step "run the default test suite on $cores cores" \
    "$venv/bin/python" -m pytest -q -n "$cores" --dist loadfile "${marks[@]}" ;;
  quick|full)
    configfile=$([ "$job" = quick ] && echo config/quick.yaml || echo config/config.yaml)
    step "run the workflow on $configfile with $cores cores" \
      snakemake --cores "$cores" --configfile "$configfile" "${frontend[@]}"
    step "write its report, results/report.html" \
      snakemake --cores "$cores" --configfile "$configfile" "${frontend[@]}" --report results/report.html ;;
esac
$dry || printf '\nsetup: %s finished in %dm %02ds\n' "$job" $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60))
