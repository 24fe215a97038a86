#!/bin/sh
# tests/integration/tls.sh: memfloord over HTTPS and the certificate swap.
#
# Makes two throwaway self-signed pairs with openssl, starts $MEMFLOORD
# (default build/memfloord) with --tls-cert/--tls-key on a free loopback
# port, talks HTTPS with curl --cacert (also an AdmissionReview, the
# webhook's real traffic), then replaces the files with the second pair
# the way a Secret volume is updated (a new ..data symlink), with no
# SIGHUP: the new certificate must be served (its SHA-256 fingerprint,
# read with openssl s_client, and curl trusting only the new one) with no
# failed request in a loop that runs through the swap.  SIGHUP reloads
# too.  A bad pair on reload (a key that does not match, then a file that
# is no certificate) must keep the pair in service and say so in the log.
# Certificates replaced by many reloads are freed once no handshake can be
# using them: the metrics then count one generation.
#
# Run from the repository root (or set MF_TOP).  Needs openssl and curl.
# Prints one line per check and "N passed, M failed"; exits non-zero when a
# check failed.
set -eu

top=${MF_TOP:-.}
cd "$top"
daemon_bin=${MEMFLOORD:-build/memfloord}
check_name=tls
daemon=""
loop=""
cleanup() {
	stop_all "$loop" "$daemon"
}
. "$top/tests/lib/check.sh"

for tool in openssl curl; do
	if ! command -v $tool >/dev/null 2>&1; then
		fail "$tool is needed"
		summary
		exit 1
	fi
done
# --- two throwaway pairs ----------------------------------------------------
# make_pair N: $tmp/certN.pem and $tmp/keyN.pem, for 127.0.0.1 and localhost.
make_pair() {
	timeout 60 openssl req -x509 -newkey ec \
	    -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
	    -subj "/CN=memfloor test $1" \
	    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
	    -keyout "$tmp/key$1.pem" -out "$tmp/cert$1.pem" >/dev/null 2>&1
}
if ! make_pair 1 || ! make_pair 2; then
	fail "openssl could not make a self-signed pair"
	summary
	exit 1
fi
fingerprint() {
	openssl x509 -noout -fingerprint -sha256 -in "$1" | sed 's/.*=//'
}
fp1=$(fingerprint "$tmp/cert1.pem")
fp2=$(fingerprint "$tmp/cert2.pem")
cat "$tmp/cert1.pem" "$tmp/cert2.pem" >"$tmp/both.pem"

# install CERT KEY: the served files as the kubelet lays out a Secret
# volume: tls.crt and tls.key link into ..data, a link to this version's
# directory; an update writes a new directory and renames a new ..data link
# over the old one, so both files change at once.
vol=$tmp/secret
mkdir "$vol"
version=0
install_pair() {
	version=$((version + 1))
	mkdir "$vol/..v$version"
	cp "$1" "$vol/..v$version/tls.crt"
	cp "$2" "$vol/..v$version/tls.key"
	ln -s "..v$version" "$vol/..data_tmp"
	mv -T "$vol/..data_tmp" "$vol/..data"
	[ -e "$vol/tls.crt" ] || ln -s ..data/tls.crt "$vol/tls.crt"
	[ -e "$vol/tls.key" ] || ln -s ..data/tls.key "$vol/tls.key"
}
install_pair "$tmp/cert1.pem" "$tmp/key1.pem"

# --- the daemon ---------------------------------------------------------------
# A 1 s request deadline: a replaced certificate is freed 2 s after.
serve "$tmp/daemon.log" --tls-cert "$vol/tls.crt" --tls-key "$vol/tls.key" \
    --request-timeout 1
daemon=$pid
base=https://127.0.0.1:$port

# get CA PATH: HTTP status of GET PATH trusting only CA (000: no answer).
get() {
	curl -sS --max-time 10 -o /dev/null -w '%{http_code}' --cacert "$1" \
	    "$base$2" 2>/dev/null || true
}

# served: the SHA-256 fingerprint of the certificate the daemon presents.
served() {
	timeout 10 openssl s_client -connect "127.0.0.1:$port" \
	    -servername localhost </dev/null 2>/dev/null |
	    openssl x509 -noout -fingerprint -sha256 2>/dev/null |
	    sed 's/.*=//'
}

# wait_served FP: up to 5 s for the daemon to present FP.
wait_served() {
	n=0
	while [ $n -lt 50 ]; do
		[ "$(served)" = "$1" ] && return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}

log_count() { grep -c "$1" "$tmp/daemon.log" || true; }

# --- first pair -----------------------------------------------------------------
if grep -q 'listening on .* (https' "$tmp/daemon.log"; then
	pass "the log says https"
else
	fail "the log does not say https: $(head -n 3 "$tmp/daemon.log")"
fi
is "HTTPS with the first CA" "$(get "$tmp/cert1.pem" /healthz)" 200
is "the second CA does not verify the first certificate" \
    "$(get "$tmp/cert2.pem" /healthz)" 000
is "first certificate served (SHA-256 fingerprint)" "$(served)" "$fp1"
code=$(curl -sS --max-time 10 -o "$tmp/review.json" -w '%{http_code}' \
    --cacert "$tmp/cert1.pem" -H 'Content-Type: application/json' \
    --data-binary @examples/k8s-admissionreview.json \
    "$base/v1/admission-review" 2>/dev/null || true)
if [ "$code" = 200 ] && grep -q '"allowed":true' "$tmp/review.json" &&
    grep -q '"patchType":"JSONPatch"' "$tmp/review.json"; then
	pass "AdmissionReview over HTTPS"
else
	fail "AdmissionReview over HTTPS: $code $(head -c 200 "$tmp/review.json" \
	    2>/dev/null)"
fi

# --- the swap, under load ---------------------------------------------------
# Each request trusts both CAs, so any handshake with either pair passes;
# a failure is a dropped or broken connection during the swap.
: >"$tmp/loop.out"
(
	while [ ! -e "$tmp/stop" ]; do
		c=$(get "$tmp/both.pem" /healthz)
		echo "$c" >>"$tmp/loop.out"
	done
) &
loop=$!
sleep 1
reloads=$(log_count 'certificate reloaded')
install_pair "$tmp/cert2.pem" "$tmp/key2.pem"
if wait_served "$fp2"; then
	pass "a Secret volume update: the second certificate is served"
else
	fail "a Secret volume update: still serving $(served)"
fi
sleep 1
touch "$tmp/stop"
wait "$loop" 2>/dev/null || true
loop=""
total=$(wc -l <"$tmp/loop.out" | tr -d ' ')
bad=$(grep -vc '^200$' "$tmp/loop.out" || true)
if [ "$total" -ge 5 ] && [ "$bad" -eq 0 ]; then
	pass "no failed request during the swap ($total requests)"
else
	fail "$bad of $total requests failed during the swap:" \
	    "$(grep -v '^200$' "$tmp/loop.out" | sort | uniq -c | tr '\n' ' ')"
fi
is "the log says the certificate was reloaded" \
    "$(log_count 'certificate reloaded')" $((reloads + 1))
is "HTTPS with the second CA" "$(get "$tmp/cert2.pem" /healthz)" 200
is "the first CA no longer verifies" "$(get "$tmp/cert1.pem" /healthz)" 000
kill -HUP "$daemon"
n=0
while [ $n -lt 50 ] && [ "$(log_count 'certificate reloaded')" -le $((reloads + 1)) ]
do
	sleep 0.1
	n=$((n + 1))
done
is "SIGHUP reloads the certificate too" \
    "$(log_count 'certificate reloaded')" $((reloads + 2))

# --- bad pairs keep the one in service ------------------------------------------
# bad_reload NAME CERT KEY
bad_reload() {
	kept=$(log_count 'keeping the certificate in service')
	install_pair "$2" "$3"
	kill -HUP "$daemon"
	n=0
	while [ $n -lt 50 ] &&
	    [ "$(log_count 'keeping the certificate in service')" -le "$kept" ]
	do
		sleep 0.1
		n=$((n + 1))
	done
	if [ "$(log_count 'keeping the certificate in service')" -gt "$kept" ]
	then
		pass "$1: the log says the pair in service is kept"
	else
		fail "$1: no 'keeping' line: $(tail -n 3 "$tmp/daemon.log")"
	fi
	code=$(get "$tmp/cert2.pem" /healthz)
	if [ "$code" = 200 ] && [ "$(served)" = "$fp2" ]; then
		pass "$1: the second certificate is still served"
	else
		fail "$1: HTTPS with the second CA: $code"
	fi
}
bad_reload "mismatched key" "$tmp/cert1.pem" "$tmp/key2.pem"
printf 'not a certificate\n' >"$tmp/junk.pem"
bad_reload "junk certificate" "$tmp/junk.pem" "$tmp/key2.pem"

# --- replaced certificates are freed ---------------------------------------------
install_pair "$tmp/cert2.pem" "$tmp/key2.pem"
for i in 1 2 3 4 5; do
	kill -HUP "$daemon"
	sleep 0.2
done
metric() {
	curl -sS --max-time 10 --cacert "$tmp/cert2.pem" "$base/metrics" \
	    2>/dev/null | sed -n "s/^$1 //p"
}
held=$(metric memfloor_tls_certificate_generations)
if [ -n "$held" ] && [ "$held" -gt 1 ]; then
	pass "just after the reloads, $held certificates are held"
else
	fail "just after five reloads, '$held' certificates are held"
fi
sleep 3
get "$tmp/cert2.pem" /healthz >/dev/null
is "once no handshake can use them, replaced certificates are freed" \
    "$(metric memfloor_tls_certificate_generations)" 1
if [ "$(metric 'memfloor_tls_reloads_total{result="ok"}')" -ge 7 ] &&
    [ "$(metric 'memfloor_tls_reloads_total{result="error"}')" -ge 2 ]; then
	pass "the metrics count TLS reloads by result"
else
	fail "memfloor_tls_reloads_total: $(metric 'memfloor_tls_reloads_total{result="ok"}')"
fi

if kill -0 "$daemon" 2>/dev/null; then
	pass "daemon still running"
else
	fail "daemon exited: $(tail -n 5 "$tmp/daemon.log")"
fi

summary
