package netlimit

import (
	"errors"
	"net"
	"testing"
)

func listen(t *testing.T, n int) *Listener {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(tcp, n)
	t.Cleanup(func() { l.Close() })
	return l
}

func dial(t *testing.T, l *Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLimit: with the limit open, the next connection is accepted only once one of them is
// closed; closing a connection twice gives back one slot.
func TestLimit(t *testing.T) {
	l := listen(t, 2)
	for range 3 {
		dial(t, l)
	}
	var served []net.Conn
	for range 2 {
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		served = append(served, c)
	}
	third := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			t.Error(err)
		}
		third <- c
	}()
	select {
	case <-third:
		t.Fatal("a third connection was accepted while two were open")
	default:
	}
	if l.Open() != 2 {
		t.Fatalf("open %d, want 2", l.Open())
	}
	served[0].Close()
	served[0].Close()
	c := <-third
	defer c.Close()
	if l.Open() != 2 || l.Peak() != 2 || l.Limit() != 2 {
		t.Fatalf("open %d, peak %d, limit %d; want 2, 2, 2", l.Open(), l.Peak(), l.Limit())
	}
	served[1].Close()
	c.Close()
	if l.Open() != 0 {
		t.Fatalf("open %d after every connection closed", l.Open())
	}
}

// TestCloseWakesAccept: an Accept waiting for a slot returns net.ErrClosed when the listener
// is closed, as http.Server.Shutdown needs.
func TestCloseWakesAccept(t *testing.T) {
	l := listen(t, 1)
	dial(t, l)
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		done <- err
	}()
	l.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
}
