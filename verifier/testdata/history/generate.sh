#!/usr/bin/env bash
# generate.sh — export the bundles of the history corpus with the binaries of old commits.
#
#   verifier/testdata/history/generate.sh NN [NN ...]     entries of commits.tsv to generate
#   verifier/testdata/history/generate.sh --list          the entries and whether they exist
#
# For each entry: the commit is extracted with git archive into a temporary directory, its
# own evidentd (and evident, evident-witness where the entry needs them) is built, evidentd
# runs on loopback (port 0) with a temporary data directory, the envelopes of input/ are
# submitted one per request, chains are sealed, SCITT statements registered (POST /entries)
# where the entry says so, and the bundles are fetched with GET /v1/export. Beside each
# bundle NN-<commit>-<label>-<export>.zip it writes
#   .trust.json  the keys of that evidentd's data directory (mktrust), pinned by the test;
#   .about.json  how the bundle was made (commit, its date and subject, the format change,
#                flags, export query).
# The expectations (.expect.json) are written by the Go test:
#   go test ./verifier -run TestBundleHistory -update-history=new
#
# An existing bundle is never overwritten (the corpus is real bytes written by old code;
# regenerating them would test nothing): the script stops unless --force is given. Append
# an entry to commits.tsv when the bundle format changes, then run this for that entry only.
#
# Needs git, go, curl, unzip and a loopback interface. Nothing leaves the machine.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
force=0
list=0
nums=()
for a in "$@"; do
	case $a in
	--force) force=1 ;;
	--list) list=1 ;;
	-h | --help)
		sed -n '2,23p' "$0"
		exit 0
		;;
	*) nums+=("$a") ;;
	esac
done

entries() { grep -v '^#' "$here/commits.tsv" | grep -v '^$'; }

if [ "$list" = 1 ] || [ ${#nums[@]} -eq 0 ]; then
	entries | while IFS=$'\t' read -r nn commit label features reason; do
		n=$(ls "$here/$nn-$commit-$label"-*.zip 2>/dev/null | wc -l)
		printf '%s %s %-20s %-40s %s bundle(s)\n' "$nn" "$commit" "$label" "$features" "$n"
	done
	[ "$list" = 1 ] && exit 0
	echo "usage: $0 [--force] NN [NN ...]" >&2
	exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/evident-history.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]:-}"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# Today's helper (it only reads keys and writes the trust file; it exports nothing).
(cd "$repo" && timeout 600 go build -o "$tmp/mktrust" ./verifier/testdata/history/mktrust)

# urlenc percent-encodes a query or path value.
urlenc() {
	local s=$1 out='' c i
	local LC_ALL=C
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[A-Za-z0-9._~-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	printf '%s' "$out"
}

# waitaddr LOGFILE PATTERN: the http://127.0.0.1:PORT a program logged it listens on.
waitaddr() {
	local i a
	for ((i = 0; i < 300; i++)); do
		a=$(grep -o "$2.*addr=http://127\.0\.0\.1:[0-9]*" "$1" 2>/dev/null | head -1 | grep -o 'http://127\.0\.0\.1:[0-9]*' || true)
		if [ -n "$a" ]; then
			printf '%s' "$a"
			return 0
		fi
		sleep 0.1
	done
	echo "no listening address in $1:" >&2
	tail -20 "$1" >&2
	return 1
}

# Runs one entry of commits.tsv.
generate() {
	local nn=$1 commit=$2 label=$3 features=$4 reason=$5
	local base="$nn-$commit-$label"
	local w="$tmp/$nn"
	if ls "$here/$base"-*.zip >/dev/null 2>&1 && [ "$force" = 0 ]; then
		echo "$base: bundles exist; they are never regenerated (--force to overwrite anyway)" >&2
		return 1
	fi
	has() { [[ ",$features," == *",$1,"* ]]; }
	mkdir -p "$w/src" "$w/keys"
	echo "== $base ($features)"
	git -C "$repo" archive "$commit" | tar -x -C "$w/src"
	local progs=(evidentd)
	has rotate && progs+=(evident)
	has witness && progs+=(evident-witness)
	for p in "${progs[@]}"; do
		(cd "$w/src" && timeout 900 go build -buildvcs=false -o "$w/$p" "./cmd/$p")
	done

	local flags=(--data "$w/data" --checkpoint-interval 200ms --seal-every 0 --seal-interval 0)
	has mldsa && flags+=(--log-mldsa)
	local inputs="input/a1.jsonl, seal, $(has rotate && echo 'evident keys rotate, ')input/a2.jsonl, seal; input/b.jsonl, seal$(has meta && echo '; input/c.audit.jsonl, POST evidence-head input/c.describe.json, seal')"
	local evpid='' base_url=''
	start() {
		local log="$w/evidentd.$1.log"
		timeout 900 "$w/evidentd" "${flags[@]}" --listen 127.0.0.1:0 >"$log" 2>&1 &
		evpid=$!
		pids+=("$evpid")
		base_url=$(waitaddr "$log" 'evidentd listening')
	}
	stop() {
		kill -TERM "$evpid"
		wait "$evpid" 2>/dev/null || true
	}

	# A first start creates the keys (the witness must know the log key before evidentd
	# starts with a policy naming it).
	start init
	stop
	local origin
	origin=$(cut -d+ -f1 "$w/data/keys/log.vkey")
	cp "$w/data/keys/service.key" "$w/keys/service-0.pem"
	local trustargs=(-origin "$origin" -log-vkey "$w/data/keys/log.vkey" -issuer-key "$w/keys/service-0.pem")
	has mldsa && trustargs+=(-mldsa-vkey "$w/data/keys/log-mldsa.vkey")
	if has witness; then
		mkdir -p "$w/witness"
		printf 'log %s %s\n' "$origin" "$(cat "$w/data/keys/log.vkey")" >"$w/witness/logs.conf"
		local wflags=(--state "$w/witness" --logs "$w/witness/logs.conf" --name witness.example/history)
		local wvkey
		wvkey=$(timeout 60 "$w/evident-witness" "${wflags[@]}" --print-vkeys | head -1)
		timeout 900 "$w/evident-witness" "${wflags[@]}" --listen 127.0.0.1:0 >"$w/witness.log" 2>&1 &
		pids+=("$!")
		local wurl
		wurl=$(waitaddr "$w/witness.log" 'evident-witness listening')
		printf 'witness w1 %s %s\nquorum w1\n' "$wvkey" "$wurl" >"$w/witness.policy"
		flags+=(--witness-policy "$w/witness.policy")
		trustargs+=(-witness-policy "$w/witness.policy")
	fi
	# scitt: registration policy 1 from the start after the keys were made (the init start
	# has none), so that its policy statement is signed by the first service key.
	has scitt && flags+=(--registration-policy "$here/input/scitt-policy-1.json")
	start run

	post() { # CHAIN FILE [QUERY]: one record per request, as every evidentd since the first takes
		local line code
		while IFS= read -r line; do
			printf '%s' "$line" >"$w/rec.json"
			code=$(curl -sS --max-time 60 -o "$w/resp.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
				--data-binary "@$w/rec.json" "$base_url/v1/chains/$(urlenc "$1")/entries${3:+?$3}")
			if [ "$code" != 201 ]; then
				echo "POST $1 answered $code: $(head -c 600 "$w/resp.json")" >&2
				return 1
			fi
		done <"$2"
	}
	seal() {
		local code
		code=$(curl -sS --max-time 120 -o "$w/resp.json" -w '%{http_code}' -X POST "$base_url/v1/chains/$(urlenc "$1")/seal")
		if [ "$code" != 201 ]; then
			echo "seal $1 answered $code: $(head -c 600 "$w/resp.json")" >&2
			return 1
		fi
	}
	register() { # FILE STATUS: POST /entries with a COSE_Sign1; a pending answer (202, or 303 before draft -11) is polled until registered
		local code loc i
		code=$(curl -sS --max-time 60 -o "$w/resp.cbor" -D "$w/resp.hdr" -w '%{http_code}' -X POST -H 'Content-Type: application/cose' \
			--data-binary "@$1" "$base_url/entries")
		if { [ "$code" = 202 ] || [ "$code" = 303 ]; } && [ "$2" = 201 ]; then
			loc=$(tr -d '\r' <"$w/resp.hdr" | sed -n 's/^[Ll]ocation: //p' | head -1)
			case $loc in /*) loc=$base_url$loc ;; esac
			for ((i = 0; i < 300; i++)); do
				code=$(curl -sS --max-time 60 -o "$w/resp.cbor" -w '%{http_code}' "$loc")
				[ "$code" = 200 ] && code=201 && break
				sleep 0.1
			done
		fi
		if [ "$code" != "$2" ]; then
			echo "POST /entries $(basename "$1") answered $code, want $2: $(head -c 600 "$w/resp.cbor" | od -An -c | head -5)" >&2
			return 1
		fi
	}
	if has scitt; then
		register "$here/input/scitt-builder-1.cose" 201
		register "$here/input/scitt-scanner-1.cose" 201
		inputs="POST /entries input/scitt-builder-1.cose, input/scitt-scanner-1.cose (policy 1); $inputs"
	fi

	local A=wsp_history_a B='wsp:history+b' C=wsp_history_c
	post "$A" "$here/input/a1.jsonl"
	seal "$A"
	if has rotate; then
		stop
		timeout 120 "$w/evident" keys rotate -data "$w/data" >"$w/rotate.out"
		cp "$w/data/keys/service.key" "$w/keys/service-1.pem"
		trustargs+=(-issuer-key "$w/keys/service-1.pem")
		start rotated
	fi
	post "$A" "$here/input/a2.jsonl"
	seal "$A"
	post "$B" "$here/input/b.jsonl"
	seal "$B"
	local chains=("$A" "$B")
	if has meta; then
		post "$C" "$here/input/c.audit.jsonl"
		local code
		code=$(curl -sS --max-time 60 -o "$w/resp.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
			--data-binary "@$here/input/c.describe.json" "$base_url/v1/chains/$C/evidence-head")
		if [ "$code" != 201 ]; then
			echo "evidence-head answered $code: $(head -c 600 "$w/resp.json")" >&2
			return 1
		fi
		seal "$C"
		chains+=("$C")
	fi
	local T=urn:cop:topic:history-1
	if has cop; then
		post "$T" "$here/input/cop1.jsonl" profile=cop%2F1.0
		seal "$T"
		post "$T" "$here/input/cop2.jsonl" profile=cop%2F1.0
		seal "$T"
		inputs+="; input/cop1.jsonl (?profile=cop/1.0), seal, input/cop2.jsonl, seal"
	fi
	if has scitt; then
		# Policy 2 (the builder only) put in force by a restart, then one statement it
		# admits and one it refuses.
		stop
		flags=("${flags[@]/%scitt-policy-1.json/scitt-policy-2.json}")
		start policy2
		register "$here/input/scitt-builder-2.cose" 201
		register "$here/input/scitt-scanner-2.cose" 403
		inputs+="; restart with policy 2, POST /entries input/scitt-builder-2.cose (and input/scitt-scanner-2.cose, refused 403)"
	fi

	# Exports: NAME and query.
	local exports=()
	if has multi; then
		local q='' c
		for c in "${chains[@]}"; do q+="${q:+&}chain=$(urlenc "$c")"; done
		exports+=("chains $q")
	elif ! has cop && ! has scitt; then
		exports+=("a chain=$(urlenc "$A")" "b chain=$(urlenc "$B")")
	fi
	has slice && exports+=("slice chain=$A&task=$(urlenc 'tsk_ü1')")
	has cop && exports+=("cop chain=$(urlenc "$T")")
	has scitt && exports+=("scitt registrations=all")

	"$tmp/mktrust" "${trustargs[@]}" >"$w/trust.json"
	local date subject
	date=$(git -C "$repo" log -1 --format=%cI "$commit")
	subject=$(git -C "$repo" log -1 --format=%s "$commit")
	local e name q out code
	for e in "${exports[@]}"; do
		name=${e%% *} q=${e#* }
		out="$here/$base-$name"
		code=$(curl -sS --max-time 120 -o "$out.zip" -w '%{http_code}' "$base_url/v1/export?$q")
		if [ "$code" != 200 ]; then
			echo "export $q answered $code: $(head -c 600 "$out.zip")" >&2
			rm -f "$out.zip"
			return 1
		fi
		unzip -tq "$out.zip" >/dev/null
		cp "$w/trust.json" "$out.trust.json"
		{
			printf '{\n'
			printf '  "commit": "%s",\n' "$(git -C "$repo" rev-parse "$commit")"
			printf '  "commit_date": "%s",\n' "$date"
			printf '  "subject": %s,\n' "$(json "$subject")"
			printf '  "format_change": %s,\n' "$(json "$reason")"
			printf '  "features": %s,\n' "$(json "$features")"
			printf '  "evidentd_flags": %s,\n' "$(json "--checkpoint-interval 200ms --seal-every 0 --seal-interval 0$(has mldsa && echo ' --log-mldsa')$(has witness && echo ' --witness-policy (one evident-witness of the same commit, quorum 1)')$(has scitt && echo ' --registration-policy input/scitt-policy-1.json, then input/scitt-policy-2.json')")"
			printf '  "export": %s,\n' "$(json "GET /v1/export?$q")"
			printf '  "inputs": %s,\n' "$(json "$inputs")"
			printf '  "sha256": "%s"\n' "$(sha256sum "$out.zip" | cut -d' ' -f1)"
			printf '}\n'
		} >"$out.about.json"
		echo "   $base-$name.zip $(stat -c %s "$out.zip") bytes"
	done
	stop
}

# json quotes a string as a JSON string (the values here are ASCII without control characters).
json() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	printf '"%s"' "$s"
}

for n in "${nums[@]}"; do
	line=$(entries | awk -F'\t' -v n="$n" '$1 == n')
	if [ -z "$line" ]; then
		echo "no entry $n in commits.tsv" >&2
		exit 2
	fi
	IFS=$'\t' read -r nn commit label features reason <<<"$line"
	start_s=$(date +%s)
	generate "$nn" "$commit" "$label" "$features" "$reason"
	echo "   $(($(date +%s) - start_s)) s"
done
echo "now: go test ./verifier -run TestBundleHistory -update-history=new"
