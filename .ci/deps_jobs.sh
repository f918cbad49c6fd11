#!/usr/bin/env bash
# The wheel and the declared dependency ranges, as a user meets them. Three jobs; .ci/run
# runs all three, and each runs alone:
#
#   bash .ci/deps_jobs.sh wheel     # build sdist + wheel, twine check, their contents; install the
#                                   # wheel in a clean venv without torch, run the README quickstart
#                                   # from it, and the one-line error of a torch-only import
#   bash .ci/deps_jobs.sh lowest    # the lowest versions pyproject.toml declares (uv, lowest-direct),
#                                   # then the lookup, scoring and search tests
#   bash .ci/deps_jobs.sh newest    # the same tests on the newest Python the machine offers (apt's
#                                   # Debian Python or, where newer, the image's pyenv builds), with
#                                   # the newest releases the ranges allow (uv, highest)
#   bash .ci/deps_jobs.sh all       # the three (the default)
#
# Venvs: .venv-dist (build, twine, uv), .venv-wheel, .venv-lowest, .venv-newest, made afresh
# each run. The newest job installs the Debian Python with apt-get (as root, as CI runs);
# without apt-get it fails, it never skips. Tables come from $NASBENCH_BERT_RELEASE
# (default ../shared/upstream), built into a private cache.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RELEASE="${NASBENCH_BERT_RELEASE:-$ROOT/../shared/upstream}"
[ -f "$RELEASE/training-free-nas/data/BERT_benchmark.json" ] || { echo "deps_jobs: no release files in $RELEASE" >&2; exit 1; }
RELEASE=$(cd "$RELEASE" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nasbench-bert-deps.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PIP="pip install -q --disable-pip-version-check"
quiet_pip() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }  # this machine's pip.conf
UV=.venv-dist/bin/uv
# the lookup, scoring and search tests (none needs an [hpo] extra; the ones that need torch
# carry the torch mark; a skipped test fails the job); test_no_torch: the [torch] message
TESTS=(tests/test_tables.py tests/test_values.py tests/test_metrics.py tests/test_scoring.py tests/test_search.py
       tests/test_no_torch.py)

timed() {  # timed NAME CMD...: run, then say how long it took
    local t0=$SECONDS
    "$@"
    echo "deps_jobs: $1 took $(( SECONDS - t0 )) s"
}

tools() {  # build, twine and uv (uv from the package registry), in their own venv
    [ -x .venv-dist/bin/twine ] && [ -x "$UV" ] && return 0
    rm -rf .venv-dist
    python3 -m venv .venv-dist
    quiet_pip .venv-dist/bin/$PIP build twine uv
}

# pytest, failing on any skip: a test these jobs cannot run must not pass silently
run_tests() {  # run_tests VENV [MARK_EXPRESSION]: tests marked torch are deselected by name, never skipped
    local log="$WORK/pytest-$(basename "$1").log" marks="not slow and not reference${2:+ and $2}"
    (cd "$ROOT" && NASBENCH_BERT_RELEASE="$RELEASE" NASBENCH_BERT_CACHE="$WORK/cache-$(basename "$1")" \
        "$1/bin/python" -m pytest -q -p no:cacheprovider -rfEs -m "$marks" "${TESTS[@]}") >"$log" 2>&1 \
        || { sed -n '/short test summary info/,$p' "$log"; echo "deps_jobs: tests failed in $1 (log above)" >&2; return 1; }
    tail -n 1 "$log"
    if grep -qiE "^SKIPPED|[0-9]+ skipped" "$log"; then
        grep -E "^SKIPPED" "$log" >&2
        echo "deps_jobs: tests were skipped in $1; every one must run here (a torch test: mark it torch)" >&2
        return 1
    fi
}

job_wheel() {
    tools
    local dist="$WORK/dist" out="$WORK/elsewhere"
    .venv-dist/bin/python -m build -q --outdir "$dist" . >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; return 1; }
    if grep -qE "Package would be ignored|Setuptools[A-Za-z]*Warning" "$WORK/build.log"; then  # e.g. a data folder setuptools would skip
        cat "$WORK/build.log"; echo "deps_jobs: setuptools warned while building the sdist and wheel (above)" >&2; return 1
    fi
    ls -l "$dist"
    .venv-dist/bin/twine check --strict "$dist"/*
    .venv-dist/bin/python .ci/dist_check.py contents "$dist"
    rm -rf .venv-wheel
    python3 -m venv .venv-wheel
    quiet_pip .venv-wheel/bin/$PIP "$dist"/nasbench_bert-*.whl   # what `pip install nasbench-bert` installs: no torch
    if .venv-wheel/bin/python -c "import torch" 2>/dev/null; then
        echo "deps_jobs: torch is installed in .venv-wheel; the wheel's core dependencies must not pull it" >&2; return 1
    fi
    # from a folder outside the checkout, with a fresh user cache built from the release files
    mkdir -p "$out"
    (cd "$out" && env -u NASBENCH_BERT_DATA NASBENCH_BERT_CACHE="$WORK/cache-wheel" NASBENCH_BERT_RELEASE="$RELEASE" \
        "$ROOT/.venv-wheel/bin/python" "$ROOT/.ci/dist_check.py" quickstart)
    (cd "$out" && NASBENCH_BERT_CACHE="$WORK/cache-wheel" "$ROOT/.venv-wheel/bin/nasbench-bert" query 0 >"$WORK/query.txt")
    head -n 4 "$WORK/query.txt"
    # a torch-only module, and a command that needs torch: one line that names the [torch] extra
    local err
    if err=$(cd "$out" && "$ROOT/.venv-wheel/bin/python" -c "import nasbench_bert.models" 2>&1); then
        echo "deps_jobs: nasbench_bert.models imported without torch" >&2; return 1
    fi
    echo "import nasbench_bert.models -> $(tail -n 1 <<<"$err")"
    if ! tail -n 1 <<<"$err" | grep -qF "[torch]" || grep -q "During handling\|No module named 'torch'" <<<"$err"; then
        echo "deps_jobs: the import error does not end in one line naming the [torch] extra:" >&2; echo "$err" >&2; return 1
    fi
    if err=$(cd "$out" && NASBENCH_BERT_CACHE="$WORK/cache-wheel" "$ROOT/.venv-wheel/bin/nasbench-bert" \
            proxies compute --ids 0-1 --proxies paper --out "$out/p.parquet" 2>&1); then
        echo "deps_jobs: proxies compute ran without torch" >&2; return 1
    fi
    echo "nasbench-bert proxies compute -> $err"
    if [ "$(wc -l <<<"$err")" != 1 ] || ! grep -qF "[torch]" <<<"$err"; then
        echo "deps_jobs: the CLI did not answer one line naming the [torch] extra" >&2; return 1
    fi
}

# install the declared dependencies with one resolution (the core ranges and the [plot]
# extra's: one search test draws a plot), the package (editable, no deps: the tests import
# the checkout) and the test tools; print the versions, and check them against the bounds
install_deps() {  # install_deps VENV PYTHON RESOLUTION WITH_TORCH(yes|no)
    local venv=$1 res=$3 extras=plot
    rm -rf "$venv"
    "$2" -m venv "$venv"
    "$UV" pip install -q --python "$venv/bin/python" pytest hypothesis packaging
    "$UV" pip install -q --python "$venv/bin/python" --resolution "$res" -r pyproject.toml --extra plot
    "$UV" pip install -q --python "$venv/bin/python" --no-deps -e .
    if [ "$4" = yes ]; then
        # the README's way: torch==2.13.0, the [torch] extra's only release (its range is
        # >=2.13,<2.14), the CPU build pip finds here; uv would resolve the CUDA build. After
        # the resolution, which it keeps (pip upgrades nothing already satisfied; checked below)
        quiet_pip $venv/bin/$PIP torch==2.13.0
        extras=plot,torch
    fi
    if [ "$4" = no ] && "$venv/bin/python" -c "import torch" 2>/dev/null; then
        echo "deps_jobs: torch in $venv" >&2; return 1
    fi
    "$venv/bin/python" .ci/dist_check.py versions "$([ "$res" = lowest-direct ] && echo lowest || echo any)" "$extras"
}

job_lowest() {  # on the lowest Python requires-python allows (this machine's python3, 3.11), with torch
    tools
    timed install_deps .venv-lowest "$(python3 -c "import sys; print(sys.executable)")" lowest-direct yes
    timed run_tests "$ROOT/.venv-lowest"
}

debian_python() {  # the newest pythonX.Y-venv apt offers, installed; prints /usr/bin/pythonX.Y
    command -v apt-get >/dev/null || { echo "deps_jobs: apt-get not found: the newest job runs on the Debian Python" >&2; return 1; }
    DEBIAN_FRONTEND=noninteractive apt-get update -q >"$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log" >&2; return 1; }
    local v
    for v in 3.14 3.13 3.12 3.11; do
        if [[ $(apt-cache policy "python$v-venv" 2>/dev/null) =~ Candidate:\ [0-9] ]]; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q "python$v-venv" >>"$WORK/apt.log" 2>&1 \
                || { cat "$WORK/apt.log" >&2; return 1; }
            echo "deps_jobs: apt offers python$v-venv (newest of 3.14..3.11): $(/usr/bin/python$v --version)" >&2
            echo "/usr/bin/python$v"
            return 0
        fi
    done
    echo "deps_jobs: apt offers no python3.11+ venv package (apt-cache policy python3.1x-venv)" >&2
    return 1
}

newest_python() {  # the newest Python on this machine: apt's (installed by debian_python) or the image's pyenv builds
    local best best_v py v
    best=$(debian_python) || return 1
    best_v=$("$best" -c 'import sys; print(sys.version_info[0] * 100 + sys.version_info[1])')
    for py in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3; do
        [ -x "$py" ] || continue
        v=$("$py" -c 'import sys; print(sys.version_info[0] * 100 + sys.version_info[1])' 2>/dev/null) || continue
        if (( v > best_v )); then best=$py; best_v=$v; fi
    done
    echo "deps_jobs: the newest job runs on $("$best" --version) ($best)" >&2
    echo "$best"
}

job_newest() {
    tools
    local py
    py=$(newest_python)
    # no torch: its range holds one release, which the lowest job and the main venv test;
    # pip would fetch the multi-GB CUDA build where this machine has no CPU wheel for $py
    timed install_deps .venv-newest "$py" highest no
    timed run_tests "$ROOT/.venv-newest" "not torch"
}

case "${1:-all}" in
    wheel) timed job_wheel ;;
    lowest) timed job_lowest ;;
    newest) timed job_newest ;;
    all) timed tools; timed job_wheel; timed job_lowest; timed job_newest ;;
    *) echo "usage: bash .ci/deps_jobs.sh [wheel|lowest|newest|all]" >&2; exit 2 ;;
esac
