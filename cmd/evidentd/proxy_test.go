package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// composeProxyConfig is the HAProxy configuration deploy/compose runs in front of the replicas.
const composeProxyConfig = "../../deploy/compose/haproxy.cfg"

// behindTheProxy runs HAProxy with the compose deployment's configuration in front of the
// two replicas (its addresses rewritten to theirs) and checks that clients of its one
// address get answers while a replica is killed: reads are retried on the other replica,
// and so are writes that could not reach the dead one. It skips when haproxy is not
// installed.
func behindTheProxy(t *testing.T, c *cluster, a *answers) {
	const chain = "wsp_dist-proxy"
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/haproxy"); err != nil {
			t.Skip("haproxy is not installed: the compose deployment's proxy configuration is not run")
		}
	}
	proxy := startProxy(t, bin, c)
	via := &cluster{addrs: [2]string{proxy, proxy}, http: c.http}
	cast := joinChain(t, via, 0, chain, a)
	for k := range 4 {
		appendBatch(t, via, a, 0, chain, cast.Bob, fmt.Sprintf("proxy-b%02d", k), 5)
	}
	// Replica 0 dies; the proxy has not noticed yet (its checks run every 2 s). Reads go to
	// replica 1 after a refused connection, and so do writes: none reached replica 0.
	c.kill(0)
	for k := range 6 {
		if _, err := via.head(t.Context(), 0, chain); err != nil {
			t.Fatalf("read %d through the proxy after replica 0 died: %v", k, err)
		}
		appendBatch(t, via, a, 0, chain, cast.Bob, fmt.Sprintf("proxy-after-kill-b%02d", k), 5)
	}
	c.start(t, 0)
	// Replica 0 is back once its health checks pass: the proxy sends it requests again.
	since := logSize(c, 0)
	err = waitFor(30*time.Second, func() error {
		for range 4 {
			if _, err := via.head(t.Context(), 0, chain); err != nil {
				return err
			}
		}
		if n := requestsServed(c, 0, since, chain); n == 0 {
			return fmt.Errorf("the restarted replica 0 got no request through the proxy")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// startProxy starts haproxy on a free loopback port with the compose configuration pointed
// at the replicas, and waits until it answers /readyz; it is stopped when the test ends.
func startProxy(t *testing.T, bin string, c *cluster) string {
	t.Helper()
	raw, err := os.ReadFile(composeProxyConfig)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfg := string(raw)
	for _, r := range [][2]string{{"bind :8080", "bind " + addr}, {"evidentd-1:8080", c.addrs[0]}, {"evidentd-2:8080", c.addrs[1]}} {
		if strings.Count(cfg, r[0]) != 1 {
			t.Fatalf("%s: want one %q to point at the test replicas", composeProxyConfig, r[0])
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "haproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	via := &cluster{addrs: [2]string{addr, addr}, http: c.http}
	err = waitFor(30*time.Second, func() error {
		a, err := via.do(context.Background(), 0, http.MethodGet, "/readyz", "", nil)
		if err == nil && a.status != http.StatusOK {
			err = fmt.Errorf("/readyz through the proxy: %s", a)
		}
		return err
	})
	if err != nil {
		out, _ := os.ReadFile(logf.Name())
		t.Fatalf("haproxy: %v\n%s", err, tailLines(out, 20))
	}
	return addr
}

// logSize is the size of replica i's log file.
func logSize(c *cluster, i int) int64 {
	fi, err := os.Stat(c.logFile(i))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// requestsServed counts the requests for chain in replica i's access log from offset on.
func requestsServed(c *cluster, i int, offset int64, chain string) int {
	b, _ := os.ReadFile(c.logFile(i))
	return strings.Count(string(b[min(offset, int64(len(b))):]), "/v1/chains/"+chain)
}
