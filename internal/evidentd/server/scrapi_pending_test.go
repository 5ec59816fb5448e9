package server_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/veraison/go-cose"

	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
)

// pollClient is one HTTP client of a pending registration: it POSTs a statement to
// /entries and GETs the Location it got, following redirects as the client does by
// default, and reports the status of each answer and its Retry-After and Location.
type pollClient struct {
	name string
	// post registers statement (a file) at base; get asks url once.
	post func(t *testing.T, base, statement string) pollAnswer
	get  func(t *testing.T, url string) pollAnswer
}

// pollAnswer is what a client saw: the final status after any redirects it followed.
type pollAnswer struct {
	status     int
	location   string
	retryAfter string
	body       []byte
}

// goDefault is Go's http.DefaultClient, which follows up to 10 redirects.
var goDefault = pollClient{
	name: "Go http.DefaultClient",
	post: func(t *testing.T, base, statement string) pollAnswer {
		b, err := os.ReadFile(statement)
		if err != nil {
			t.Fatal(err)
		}
		return goAnswer(t, do(t, http.DefaultClient, http.MethodPost, base+"/entries", server.COSEType, b))
	},
	get: func(t *testing.T, url string) pollAnswer {
		return goAnswer(t, do(t, http.DefaultClient, http.MethodGet, url, "", nil))
	},
}

func goAnswer(t *testing.T, a answer) pollAnswer {
	return pollAnswer{a.code, a.header.Get("Location"), a.header.Get("Retry-After"), a.body}
}

// curlL is `curl -L` (follows up to 50 redirects), bounded by --max-time.
var curlL = pollClient{
	name: "curl -L",
	post: func(t *testing.T, base, statement string) pollAnswer {
		return curl(t, base+"/entries", "-H", "Content-Type: "+server.COSEType, "--data-binary", "@"+statement)
	},
	get: func(t *testing.T, url string) pollAnswer { return curl(t, url) },
}

func curl(t *testing.T, url string, args ...string) pollAnswer {
	t.Helper()
	dir := t.TempDir()
	hdr, body := filepath.Join(dir, "headers"), filepath.Join(dir, "body")
	args = append([]string{"-sS", "-L", "--max-time", "8", "-D", hdr, "-o", body, "-w", "%{http_code} %{num_redirects}"}, args...)
	out, err := exec.Command("curl", append(args, url)...).Output()
	if err != nil {
		t.Fatalf("curl %s: %v", url, err)
	}
	var a pollAnswer
	var redirects int
	if f := strings.Fields(string(out)); len(f) == 2 {
		a.status, _ = strconv.Atoi(f[0])
		redirects, _ = strconv.Atoi(f[1])
	}
	if redirects != 0 {
		t.Errorf("curl -L %s followed %d redirects", url, redirects)
	}
	h, _ := os.ReadFile(hdr)
	for line := range strings.Lines(string(h)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch strings.ToLower(k) {
		case "location":
			a.location = strings.TrimSpace(v)
		case "retry-after":
			a.retryAfter = strings.TrimSpace(v)
		}
	}
	a.body, _ = os.ReadFile(body)
	return a
}

// pythonURLLib is Python's urllib.request.urlopen, whose default opener follows redirects.
var pythonURLLib = pollClient{
	name: "Python urllib",
	post: func(t *testing.T, base, statement string) pollAnswer {
		return python(t, "POST", base+"/entries", statement)
	},
	get: func(t *testing.T, url string) pollAnswer { return python(t, "GET", url, "") },
}

// pythonScript sends one request with urllib and prints the status, Location and
// Retry-After of the answer it ends at, then the hex of its body.
const pythonScript = `
import sys, urllib.request, urllib.error
method, url, statement = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(statement, "rb").read() if statement else None
req = urllib.request.Request(url, data=data, method=method)
if data is not None:
    req.add_header("Content-Type", "application/cose")
try:
    resp = urllib.request.urlopen(req, timeout=8)
except urllib.error.HTTPError as e:
    resp = e
body = resp.read()
print(resp.status)
print(resp.headers.get("Location") or "-")
print(resp.headers.get("Retry-After") or "-")
print(body.hex() or "-")
`

func python(t *testing.T, method, url, statement string) pollAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, pythonPath, "-c", pythonScript, method, url, statement).Output()
	if err != nil {
		t.Fatalf("python %s %s: %v", method, url, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 4 {
		t.Fatalf("python %s %s: %q", method, url, out)
	}
	a := pollAnswer{location: strings.TrimPrefix(f[1], "-"), retryAfter: strings.TrimPrefix(f[2], "-")}
	a.status, _ = strconv.Atoi(f[0])
	if f[3] != "-" {
		a.body = unhex(t, f[3])
	}
	return a
}

// pythonPath is the system's Python 3 (standard library only).
const pythonPath = "/usr/bin/python3"

// TestPendingRegistrationNoLoop: with a checkpoint every 10s and a registration wait of
// 1ms (evidentd --checkpoint-interval 10s --registration-wait 1ms), a pending registration
// is answered as draft-ietf-scitt-scrapi-11 says — POST /entries 202 Accepted with
// Location and Retry-After (section 2.3.2), GET of that Location 204 No Content with
// Retry-After (section 2.4.2) — and no redirect: Go's default client, curl -L and Python's
// urllib, which all follow redirects, each send one request and stop (draft -10's 303 and
// 302 to the same URL sent them round it to their redirect limits). Once the checkpoint
// is published, the same Location answers 200 with a receipt that verifies.
func TestPendingRegistrationNoLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for 10s checkpoints")
	}
	clients := []pollClient{goDefault}
	if _, err := exec.LookPath("curl"); err == nil {
		clients = append(clients, curlL)
	} else {
		t.Log("curl is not installed: not tried")
	}
	if _, err := os.Stat(pythonPath); err == nil {
		clients = append(clients, pythonURLLib)
	} else {
		t.Logf("%s is not installed: not tried", pythonPath)
	}
	data, dir := newData(t), t.TempDir()
	is := regpolicytest.NewIssuer(t, "https://build.example", cose.AlgorithmEdDSA)
	e := startEvidentd(t, data, 10*time.Second, time.Millisecond, writePolicy(t, dir, is))
	sign := func(name string) (string, []byte) {
		stmt := is.Sign(t, []byte(`{"spdxVersion":"SPDX-2.3","name":"`+name+`"}`), regpolicytest.Options{Subject: "pkg:" + name, ContentType: "application/spdx+json", IssuedAt: time.Now().Unix()})
		f := filepath.Join(dir, name+".cose")
		if err := os.WriteFile(f, stmt, 0o644); err != nil {
			t.Fatal(err)
		}
		return f, stmt
	}

	// A first registration, awaited: its receipt comes with a checkpoint just published,
	// so the clients below start at the beginning of a 10s interval and see the
	// registration pending.
	warmFile, warm := sign("warm-up")
	a := goDefault.post(t, e.base, warmFile)
	if a.status != http.StatusAccepted {
		t.Fatalf("warm-up POST: %d, want 202", a.status)
	}
	testinfra.VerifyReceipt(t, serviceKeys(t, e.base), warm, awaitReceipt(t, a.location, 100*time.Millisecond, 30*time.Second))

	type pending struct {
		c        pollClient
		stmt     []byte
		location string
	}
	var regs []pending
	for _, c := range clients {
		file, stmt := sign(strings.NewReplacer(" ", "-", ".", "-").Replace(c.name))
		start := time.Now()
		p := c.post(t, e.base, file)
		if p.status != http.StatusAccepted || len(p.body) != 0 || p.retryAfter != "10" || !strings.HasPrefix(p.location, e.base+"/entries/") {
			t.Fatalf("%s: POST /entries: %d (Location %q, Retry-After %q, %d body bytes), want 202 with Location and Retry-After: 10, no body",
				c.name, p.status, p.location, p.retryAfter, len(p.body))
		}
		g := c.get(t, p.location)
		if g.status != http.StatusNoContent || len(g.body) != 0 || g.retryAfter != "10" || g.location != "" {
			t.Fatalf("%s: GET %s: %d (Location %q, Retry-After %q), want 204 with Retry-After: 10, no Location", c.name, p.location, g.status, g.location, g.retryAfter)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: POST and GET took %v", c.name, took)
		}
		path := strings.TrimPrefix(p.location, e.base)
		if n, m := e.log.count(http.MethodPost, "/entries"), e.log.count(http.MethodGet, path); m != 1 {
			t.Errorf("%s: evidentd answered %d GET %s (and %d POST /entries), want one: the client looped", c.name, m, path, n)
		}
		regs = append(regs, pending{c, stmt, p.location})
	}
	if n := e.log.count(http.MethodPost, "/entries"); n != 1+len(clients) {
		t.Errorf("evidentd answered %d POST /entries, want %d", n, 1+len(clients))
	}

	// After the checkpoint: 200 with the receipt, to every client, at the same Location.
	keys := serviceKeys(t, e.base)
	for _, p := range regs {
		rcpt := awaitReceipt(t, p.location, time.Second, 30*time.Second)
		testinfra.VerifyReceipt(t, keys, p.stmt, rcpt)
		for _, c := range clients {
			g := c.get(t, p.location)
			if g.status != http.StatusOK || string(g.body) != string(rcpt) || g.location != p.location {
				t.Errorf("%s: GET %s after the checkpoint: %d (Location %q, %d bytes), want 200 with the receipt", c.name, p.location, g.status, g.location, len(g.body))
			}
		}
	}
}

// awaitReceipt polls a registration's Location every step — a 204 is the only other
// answer allowed — until it answers 200, and returns the receipt.
func awaitReceipt(t *testing.T, loc string, step, bound time.Duration) []byte {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		g := do(t, plain, http.MethodGet, loc, "", nil)
		switch {
		case g.code == http.StatusOK:
			if g.header.Get("Content-Type") != server.COSEType {
				t.Fatalf("GET %s: 200 %s", loc, g.header.Get("Content-Type"))
			}
			return g.body
		case g.code != http.StatusNoContent:
			t.Fatalf("GET %s: %d, want 204 or 200", loc, g.code)
		case time.Now().After(deadline):
			t.Fatalf("GET %s: still pending after %v", loc, bound)
		}
		time.Sleep(step)
	}
}
