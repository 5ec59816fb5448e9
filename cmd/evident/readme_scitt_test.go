package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

// readmeSCITT returns the commands of the README's SCITT example, one per command (lines
// continued with a backslash joined).
func readmeSCITT(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## SCITT\n")
	if i < 0 {
		t.Fatal("README has no SCITT section")
	}
	s = s[i:]
	start := strings.Index(s, "```sh\n")
	if start < 0 {
		t.Fatal("README's SCITT section has no sh block")
	}
	s = s[start+len("```sh\n"):]
	s = s[:strings.Index(s, "```")]
	var cmds []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\\\n", " "), "\n") {
		if strings.TrimSpace(l) != "" {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// evidentdProc is an evidentd started from the README's command line on loopback port 0.
type evidentdProc struct {
	cmd  *exec.Cmd
	base string
	mu   sync.Mutex
	log  []string // evidentd's standard error, line by line
}

// logged says whether a line evidentd wrote to standard error so far contains s.
func (p *evidentdProc) logged(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.log {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

var listening = regexp.MustCompile(`evidentd listening.* addr=(http://127\.0\.0\.1:[0-9]+)`)

// startEvidentd runs bin/evidentd with the README's arguments in dir, listening on a port
// of the kernel's choosing instead of the README's 8080, and waits until it listens.
func startEvidentd(t *testing.T, bin, dir string, args []string) *evidentdProc {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "evidentd"), append(args, "--listen", "127.0.0.1:0")...)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &evidentdProc{cmd: cmd}
	t.Cleanup(p.stop)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case p.base = <-found:
	case <-time.After(60 * time.Second):
		t.Fatalf("evidentd did not start listening")
	}
	return p
}

func (p *evidentdProc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// TestREADMESCITT runs the README's SCITT example as written, with the real evident and
// evidentd binaries, curl, and a fresh directory: every command must succeed. The
// statement it makes is then decoded with go-cose (not with package receipts) and the
// receipt is checked for RFC 9942's non-empty inclusion path.
func TestREADMESCITT(t *testing.T) {
	bin := buildTools(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the README's example uses curl")
	}
	dir := t.TempDir()
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	var d *evidentdProc
	var evidentdArgs []string
	for _, line := range readmeSCITT(t) {
		if f := strings.Fields(line); f[0] == "evidentd" {
			cmdline := strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
			evidentdArgs = strings.Fields(strings.TrimSuffix(cmdline, "&"))[1:]
			d = startEvidentd(t, bin, dir, evidentdArgs)
			continue
		}
		if strings.Contains(line, "http://127.0.0.1:8080") {
			if d == nil {
				t.Fatalf("%q: evidentd not started yet", line)
			}
			line = strings.ReplaceAll(line, "http://127.0.0.1:8080", d.base)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		c := exec.CommandContext(ctx, "sh", "-c", line)
		c.Dir = dir
		c.Env = append(os.Environ(), "PATH="+path)
		out, err := c.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("README: %s\n%v\n%s", line, err, out)
		}
		t.Logf("$ %s\n%s", line, out)
	}
	if d == nil {
		t.Fatal("the README's SCITT example starts no evidentd")
	}
	checkStatementWithGoCOSE(t, dir)
	checkReceiptPath(t, filepath.Join(dir, "receipt.cose"))

	// After the rotation and a restart, the receipt still verifies with the key set served
	// then: the retired key is kept.
	d.stop()
	d = startEvidentd(t, bin, dir, evidentdArgs)
	c := exec.Command("sh", "-c", "curl -s -o keys-after.cbor "+d.base+"/.well-known/scitt-keys && evident receipt verify --statement statement.cose --receipt receipt.cose --key keys-after.cbor")
	c.Dir = dir
	c.Env = append(os.Environ(), "PATH="+path)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("after rotation: %v\n%s", err, out)
	}
	if a, _ := os.ReadFile(filepath.Join(dir, "scitt-keys.cbor")); bytes.Equal(a, mustRead(t, filepath.Join(dir, "keys-after.cbor"))) {
		t.Error("the key set did not change after the rotation")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkStatementWithGoCOSE decodes statement.cose with veraison/go-cose, checks the
// headers SCITT requires and verifies the signature with the public key of issuer.key.
func checkStatementWithGoCOSE(t *testing.T, dir string) {
	t.Helper()
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(mustRead(t, filepath.Join(dir, "statement.cose"))); err != nil {
		t.Fatalf("go-cose: %v", err)
	}
	alg, err := msg.Headers.Protected.Algorithm()
	if err != nil || alg != cose.AlgorithmEdDSA {
		t.Fatalf("alg %v, %v", alg, err)
	}
	if kid, ok := msg.Headers.Protected[cose.HeaderLabelKeyID].([]byte); !ok || len(kid) != 32 {
		t.Fatalf("kid %v: want the 32-byte RFC 9679 thumbprint", msg.Headers.Protected[cose.HeaderLabelKeyID])
	}
	if ct := msg.Headers.Protected[cose.HeaderLabelContentType]; ct != "application/spdx+json" {
		t.Fatalf("content type %v", ct)
	}
	claims, ok := msg.Headers.Protected[cose.HeaderLabelCWTClaims].(map[any]any)
	if !ok {
		t.Fatalf("CWT claims (15): %T", msg.Headers.Protected[cose.HeaderLabelCWTClaims])
	}
	if claims[int64(1)] != "https://build.example" || claims[int64(2)] != "pkg:example/app@1.0" {
		t.Fatalf("CWT claims %v", claims)
	}
	if iat, ok := claims[int64(6)].(int64); !ok || iat < time.Now().Add(-time.Hour).Unix() {
		t.Fatalf("iat %v", claims[int64(6)])
	}
	if len(msg.Headers.Unprotected) != 0 || !bytes.Equal(msg.Payload, []byte("{\"spdxVersion\":\"SPDX-2.3\",\"name\":\"app\"}\n")) {
		t.Fatalf("unprotected %v, payload %q", msg.Headers.Unprotected, msg.Payload)
	}
	blk, _ := pem.Decode(mustRead(t, filepath.Join(dir, "issuer.key")))
	if blk == nil || blk.Type != "PRIVATE KEY" {
		t.Fatal("issuer.key is not a PKCS#8 PEM private key")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cose.NewVerifier(cose.AlgorithmEdDSA, k.(crypto.Signer).Public())
	if err != nil {
		t.Fatal(err)
	}
	if err := msg.Verify(nil, v); err != nil {
		t.Fatalf("go-cose verify: %v", err)
	}
}

// checkReceiptPath decodes the receipt with go-cose and fxamacker/cbor and checks RFC 9942's
// CDDL for its inclusion proof: [tree_size, leaf_index, [ + bstr ]].
func checkReceiptPath(t *testing.T, p string) {
	t.Helper()
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(mustRead(t, p)); err != nil {
		t.Fatalf("receipt: go-cose: %v", err)
	}
	vdp, ok := msg.Headers.Unprotected[int64(396)].(map[any]any)
	if !ok {
		t.Fatalf("receipt: 396 is %T", msg.Headers.Unprotected[int64(396)])
	}
	proofs, ok := vdp[int64(-1)].([]any)
	if !ok || len(proofs) == 0 {
		t.Fatalf("receipt: inclusion proofs %v", vdp[int64(-1)])
	}
	for _, pr := range proofs {
		b, _ := pr.([]byte)
		var proof struct {
			_     struct{} `cbor:",toarray"`
			Size  uint64
			Index uint64
			Path  [][]byte
		}
		if err := cbor.Unmarshal(b, &proof); err != nil {
			t.Fatalf("receipt: inclusion proof: %v", err)
		}
		if len(proof.Path) == 0 || proof.Size < 2 {
			t.Fatalf("receipt: inclusion proof of leaf %d in tree %d with %d path hashes: RFC 9942 wants [ + bstr ]", proof.Index, proof.Size, len(proof.Path))
		}
	}
}
