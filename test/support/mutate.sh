#!/usr/bin/env bash
# One mutation, tried and reverted: applies a Perl substitution to one source file, runs the named
# test files, says CAUGHT (a test failed) or SURVIVED (all passed), and restores the file from git.
#
#   test/support/mutate.sh <source file> '<perl s/// expression>' <test file>... [-- <vitest args>]
#   test/support/mutate.sh --id <ID>     (reruns row <ID> of test/mutations.tsv)
#
# The substitution must change the file (a no-op mutation is an error, not a survivor). The file is
# restored with `git checkout --` whatever happens, so a mutation is never left behind or committed.
# With an e2e test file among the tests, dist/ is built from the mutant and rebuilt after the restore.
# Used for test/MUTATIONS.md; each row there gives the arguments.
set -u
cd "$(dirname "$0")/../.."
if [ "${1:-}" = "--id" ]; then
  row=$(awk -F'\t' -v id="$2" '$1 == id' test/mutations.tsv)
  if [ -z "$row" ]; then
    echo "mutate: no mutation $2 in test/mutations.tsv" >&2
    exit 2
  fi
  IFS=$'\t' read -r _ file expr tests <<<"$row"
  # shellcheck disable=SC2086
  exec "$0" "$file" "$expr" $tests
fi
file=$1
expr=$2
shift 2
tests=()
extra=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then
    shift
    extra=("$@")
    break
  fi
  tests+=("$1")
  shift
done
if ! git diff --quiet -- "$file"; then
  echo "mutate: $file has uncommitted changes; commit or stash them first" >&2
  exit 2
fi
# End-to-end tests run the built CLI (dist/): build the mutant for them, and the restored source after.
e2e=false
case " ${tests[*]} " in *test/e2e/*) e2e=true ;; esac
restore() {
  git checkout -- "$file"
  if $e2e; then npm run build >/dev/null 2>&1 || echo "mutate: the restored build failed; run npm run build" >&2; fi
}
trap restore EXIT
perl -0pi -e "$expr" "$file"
if git diff --quiet -- "$file"; then
  echo "mutate: the substitution did not change $file" >&2
  exit 2
fi
git --no-pager diff --stat -- "$file" | head -1
if $e2e && ! npm run build >/dev/null 2>&1; then
  echo "CAUGHT"
  echo "(the mutant does not build)"
  exit 0
fi
log=$(mktemp)
CI=true FLOWER_NO_UPDATE=1 FLOWER_TEST_POSTGRES_URL=${FLOWER_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test} \
  npx vitest run "${tests[@]}" "${extra[@]}" 2>&1 | sed -E 's/\x1b\[[0-9;]*m//g' >"$log"
rc=${PIPESTATUS[0]}
if [ $rc -ne 0 ]; then
  echo "CAUGHT"
  grep -E '^ *(FAIL|×) |Error:' "$log" | grep -v '✓' | sed 's/^ *//' | sort -u | head -6
else
  echo "SURVIVED"
  grep -E 'Tests +[0-9]' "$log"
fi
rm -f "$log"
