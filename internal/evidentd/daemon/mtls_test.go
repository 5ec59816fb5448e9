package daemon

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T) *testCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key}
}

// issue returns a certificate and key signed by ca: a server certificate for 127.0.0.1, or a
// client certificate with the given URI SANs.
func (ca *testCA) issue(t *testing.T, server bool, uris ...string) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		for _, u := range uris {
			pu, _ := url.Parse(u)
			tmpl.URIs = append(tmpl.URIs, pu)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMutualTLS: evidentd serves HTTPS; a client certificate from the configured CA
// authorizes writes within its urn:evident:chains: scope; no certificate, a certificate of
// another CA, or one scoped elsewhere is refused; reads need none.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, otherCA := newCA(t), newCA(t)
	srvCert := ca.issue(t, true)
	writePEM(t, filepath.Join(dir, "server.pem"), "CERTIFICATE", srvCert.Certificate[0])
	kder, _ := x509.MarshalPKCS8PrivateKey(srvCert.PrivateKey)
	writePEM(t, filepath.Join(dir, "server.key"), "PRIVATE KEY", kder)
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", ca.cert.Raw)

	d, err := Open(context.Background(), Config{Data: filepath.Join(dir, "data"), CheckpointInterval: 100 * time.Millisecond,
		TLSCert: filepath.Join(dir, "server.pem"), TLSKey: filepath.Join(dir, "server.key"), ClientCA: filepath.Join(dir, "ca.pem"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	base := "https://" + ln.Addr().String()

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	client := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
	}
	rec := []byte(`{"jsonrpc":"2.0","id":"1","method":"m"}`)
	for _, tc := range []struct {
		name   string
		c      *http.Client
		chain  string
		status int
	}{
		{"no certificate (loopback does not count once mTLS is on)", client(), "wsp_a1", http.StatusUnauthorized},
		{"certificate of another CA", client(otherCA.issue(t, false)), "wsp_a1", -1},
		{"scoped elsewhere", client(ca.issue(t, false, "urn:evident:chains:wsp_b")), "wsp_a1", http.StatusUnauthorized},
		{"scoped here", client(ca.issue(t, false, "urn:evident:chains:wsp_a")), "wsp_a1", http.StatusCreated},
		{"unscoped certificate: every chain", client(ca.issue(t, false)), "other_chain", http.StatusCreated},
	} {
		resp, err := tc.c.Post(base+"/v1/chains/"+tc.chain+"/entries", "application/json", bytes.NewReader(rec))
		if tc.status == -1 {
			if err == nil {
				resp.Body.Close()
				t.Errorf("%s: the handshake accepted a certificate of another CA (%s)", tc.name, resp.Status)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
	}
	resp, err := client().Get(base + "/v1/chains/wsp_a1")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("public read over TLS: %v %v", resp, err)
	}
	resp.Body.Close()
}
