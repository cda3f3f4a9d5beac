#!/usr/bin/env bash
# buf lint and buf breaking on proto/ (the rules: proto/buf.yaml). Run by
# hack/check-generated.sh, so by `make check-generated`.
#
# buf breaking compares the .proto files as they are in the working tree
# (what is about to be committed) with the contract as of the last commit on
# main:
#   - on a branch: the commit where it left main (git merge-base), so a
#     breaking change in any commit of the branch, or not committed yet, fails;
#   - on main itself: HEAD's first parent, so a clean checkout of main (CI)
#     checks what its last commit (or merge) changed, and a working tree with
#     uncommitted changes is checked together with its last commit.
# The main ref is origin/main when it exists, else main. BUF_AGAINST=<commit>
# picks another base; BUF_AGAINST=none skips the comparison (e.g. a shallow
# clone with no history; a breaking change on purpose means a new package,
# sandpod.v2, not a skipped check).
set -euo pipefail
cd "$(dirname "$0")/../.."
buf=$(hack/proto/buf.sh --print)
(cd proto && "$buf" lint)

against=${BUF_AGAINST:-}
if [ -z "$against" ]; then
  main=
  for ref in origin/main main; do
    if git rev-parse -q --verify "$ref^{commit}" >/dev/null 2>&1; then main=$ref; break; fi
  done
  if [ -z "$main" ]; then
    echo "buf breaking: no main branch to compare with (set BUF_AGAINST=<commit>)" >&2
    exit 1
  fi
  head=$(git rev-parse HEAD)
  if [ "$head" = "$(git rev-parse "$main")" ]; then
    against=$(git rev-parse -q --verify 'HEAD^1^{commit}' 2>/dev/null || true)
    if [ -z "$against" ]; then
      echo "buf breaking: HEAD has no parent (shallow clone?); nothing to compare with" >&2
      exit 0
    fi
  else
    against=$(git merge-base HEAD "$main")
  fi
fi
if [ "$against" = none ]; then
  echo "buf breaking: skipped (BUF_AGAINST=none)" >&2
  exit 0
fi
old=$(mktemp -d)
trap 'rm -rf "$old"' EXIT
# The contract as of $against, read with today's buf.yaml and today's copy
# of the imported google/api files (third_party): the rules and the import
# layout are not part of the contract, and an old commit's own buf.yaml
# may not resolve imports added since.
git archive "$against" proto | tar -x -C "$old"
rm -rf "$old/proto/third_party"
cp -r proto/buf.yaml proto/third_party "$old/proto/"
(cd proto && "$buf" breaking --against "$old/proto")
