#!/usr/bin/env bash
# make-fixture.sh OLDBIN — makes testdata/v8: the data directory of a REAL evidentd release
# from before the Pebble store (commit 86927f0 of this repository), killed with SIGKILL
# right after a last acknowledged batch, so that its entry journal holds frames not folded
# into ledger.db. It is ground truth for package legacy, and for starting the new evidentd
# on a copy of it.
#
# OLDBIN is the directory holding the old binaries evidentd and evident, built with
#   git worktree add ../wt-old 86927f0 && (cd ../wt-old && go build -o OLDBIN/ ./cmd/evidentd ./cmd/evident)
# Run it from anywhere; it uses the CHAP vectors of this repository's testvectors/, curl, jq
# and gzip, listens on 127.0.0.1 (port chosen by the kernel) only, and replaces testdata/v8.
set -euo pipefail

oldbin=$(cd "${1:?usage: make-fixture.sh OLDBIN}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../../.." && pwd)
vec=$repo/testvectors
work=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

evident() { timeout 60 "$oldbin/evident" "$@"; }
data=$work/data
mkdir -p "$data"

# A SCITT issuer and the registration policy that admits it.
evident statement keygen -o "$work/issuer.key"
evident statement policy -iss https://build.example -key "$work/issuer.key" -content-type application/json -o "$work/policy.json"

"$oldbin/evidentd" --data "$data" --listen 127.0.0.1:0 --seal-interval 0 --seal-every 0 \
	--checkpoint-interval 100ms --registration-policy "$work/policy.json" --log-format json \
	>"$work/evidentd.log" 2>&1 &
pid=$!
url=
for _ in $(seq 100); do
	url=$(jq -r 'select(.msg == "evidentd listening") | .addr' "$work/evidentd.log" 2>/dev/null | head -1)
	[ -n "$url" ] && break
	sleep 0.1
done
[ -n "$url" ] || { cat "$work/evidentd.log"; echo "evidentd did not start" >&2; exit 1; }
case $url in http*) ;; *) url=http://$url ;; esac
export EVIDENT_URL=$url
echo "old evidentd at $url" >&2

# Chain 1: CHAP audit entries (import form: seq, arrived, prev_hash kept as meta) with
# non-ASCII content (display names), the first 13 entries of the reference "deep" workspace.
gzip -dc "$vec/chap-reference/py/deep.audit.jsonl.gz" >"$work/deep-all.jsonl"
head -13 "$work/deep-all.jsonl" >"$work/deep.jsonl"
evident import -q --chain wsp_chapref_deep --format json "$work/deep.jsonl" >"$work/import-deep.json"
# Chain 2: a whole small workspace, and its Coordinator's evidence head (workspace.describe).
evident import -q --chain wsp_chapref_small --describe "$vec/chap-reference/py/small.describe.json" --format json \
	"$vec/chap-reference/py/small.audit.jsonl" >"$work/import-small.json"
# Chain 3: signed CHAP envelopes (the demo's support triage): 7 now, 3 in the last batch.
head -7 "$vec/chap-demo/support-triage.jsonl" >"$work/triage-1.jsonl"
tail -n +8 "$vec/chap-demo/support-triage.jsonl" >"$work/triage-2.jsonl"
evident submit -q --chain wsp_support_triage --format json "$work/triage-1.jsonl" >"$work/submit-1.json"

# Seals (registered in the log, with receipts).
evident seal --chain wsp_support_triage --format json >"$work/seal-triage.json"
evident seal --chain wsp_chapref_small --format json >"$work/seal-small.json"

# A SCITT signed statement registered through SCRAPI (POST /entries).
echo '{"artifact":"app","version":"1.0"}' >"$work/sbom.json"
evident statement sign -key "$work/issuer.key" -iss https://build.example -sub pkg:example/app@1.0 \
	-content-type application/json -o "$work/statement.cose" "$work/sbom.json"
code=$(timeout 30 curl -s -o "$work/receipt.cose" -w '%{http_code}' -H 'Content-Type: application/cose' \
	--data-binary @"$work/statement.cose" "$url/entries")
echo "POST /entries: $code" >&2
case $code in 201 | 202) ;; *) echo "registration failed: $code" >&2; exit 1 ;; esac

# A fork refusal: a record naming the genesis as its predecessor, where the chain already
# has a first entry; the old release answers 409 fork and keeps the record as fork evidence.
fcode=$(timeout 30 curl -s -o "$work/fork.json" -w '%{http_code}' -H 'Content-Type: application/json' \
	--data-binary '{"jsonrpc":"2.0","id":"f1","method":"m","evidence":{"prev_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}}' \
	"$url/v1/chains/wsp_support_triage/entries")
echo "fork attempt: $fcode $(cat "$work/fork.json")" >&2
[ "$fcode" = 409 ] && [ "$(jq -r .code "$work/fork.json")" = fork ] || { echo "no fork refusal" >&2; exit 1; }

# The bundle of chain 3 as the old release exports it, verified by the old verifier.
evident export -q --chain wsp_support_triage -o "$work/bundle-old.zip"
timeout 60 curl -sf "$url/.well-known/evident-trust" -o "$work/trust.json"
(cd "$work" && evident verify --trust trust.json bundle-old.zip >verify.txt) # exit 0: VERIFIED

# What the old release reports, before the last batch.
timeout 30 curl -sf "$url/v1/chains" >"$work/chains-before.json"
for c in wsp_chapref_deep wsp_chapref_small wsp_support_triage; do
	timeout 30 curl -sf "$url/v1/chains/$c" >"$work/head-$c.json"
	timeout 30 curl -sf "$url/v1/chains/$c/seals" >"$work/seals-$c.json"
done

# The last batch, then SIGKILL at once: the indexer folds every 250 ms, so the batch is
# acknowledged (in the journal) and not yet in ledger.db.
evident submit -q --chain wsp_support_triage --format json "$work/triage-2.jsonl" >"$work/submit-2.json"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=

out=$here/v8
rm -rf "$out" "$here/bundle-old.zip"
cp -a "$data" "$out"
cp "$work/bundle-old.zip" "$here/bundle-old.zip"

jq -n \
	--slurpfile chains "$work/chains-before.json" \
	--slurpfile deep "$work/head-wsp_chapref_deep.json" \
	--slurpfile small "$work/head-wsp_chapref_small.json" \
	--slurpfile triage "$work/head-wsp_support_triage.json" \
	--slurpfile sdeep "$work/seals-wsp_chapref_deep.json" \
	--slurpfile ssmall "$work/seals-wsp_chapref_small.json" \
	--slurpfile striage "$work/seals-wsp_support_triage.json" \
	--slurpfile last "$work/submit-2.json" \
	--slurpfile first "$work/submit-1.json" \
	--slurpfile ideep "$work/import-deep.json" \
	--slurpfile ismall "$work/import-small.json" \
	--arg regcode "$code" \
	--arg verify "$(head -1 "$work/verify.txt")" \
	--slurpfile fork "$work/fork.json" \
	'{
	  made_by: "internal/evidentd/store/legacy/testdata/make-fixture.sh with evidentd and evident built from commit 86927f0",
	  chains_before_last_batch: $chains[0],
	  heads_before_last_batch: {wsp_chapref_deep: $deep[0], wsp_chapref_small: $small[0], wsp_support_triage: $triage[0]},
	  seals: {wsp_chapref_deep: $sdeep[0], wsp_chapref_small: $ssmall[0], wsp_support_triage: $striage[0]},
	  imports: {wsp_chapref_deep: $ideep[0], wsp_chapref_small: $ismall[0]},
	  first_batch: $first[0],
	  last_batch: {chain: "wsp_support_triage", acks: $last[0]},
	  registration: {post_entries_status: ($regcode|tonumber)},
	  fork_refusal: {chain: "wsp_support_triage", status: 409, problem: $fork[0]},
	  bundle_old_verify: $verify
	} | .summary = {
	  chains: ([.chains_before_last_batch.chains[] | {key: .chain, value: {size, head}}] | from_entries
	    | .[$last[0].chain] = {size: $last[0].size, head: $last[0].head}),
	  journaled: {chain: $last[0].chain, entries: $last[0].new, size_before: .heads_before_last_batch[$last[0].chain].size},
	  seals: ([.seals[] | .seals | length] | add),
	  registered_seals: ([.seals[] | .seals[] | select(.registered)] | length),
	  evidence_heads: [.imports[] | .evidence_head // empty | {chain, head: .evidence_head, audit_count}],
	  statements_registered: (if $regcode == "201" then 1 else 0 end),
	  forks: 1
	}' >"$out/EXPECTED.json"
du -sh "$out" "$here/bundle-old.zip" >&2

# The journal must hold the last batch unfolded (the point of the fixture): package legacy's
# test checks it (the database holds the chain at its size before the batch, the journal the
# batch). Should the old indexer have folded it in before the kill, run this script again.
if ! (cd "$repo" && timeout 300 go test -count=1 -run 'TestFixture$' ./internal/evidentd/store/legacy/ >&2); then
	echo "the fixture does not hold what it should (the last batch folded in before the kill?): run make-fixture.sh again" >&2
	exit 1
fi
