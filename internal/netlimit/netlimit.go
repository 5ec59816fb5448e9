// Package netlimit bounds the connections a server holds open at once: a listener whose
// Accept waits while the limit is reached. The connections past the limit are not accepted,
// so they wait in the kernel's accept queue (the listen backlog, net.core.somaxconn on Linux)
// and are served in their turn as served ones close; once that queue is full too, the kernel
// stops completing new handshakes and clients see their connect time out or retry. Nothing
// is read from a waiting connection, so each costs the process nothing.
//
// It is golang.org/x/net/netutil.LimitListener's mechanism, written out here (that module is
// not otherwise a dependency), with counts for metrics and tests.
package netlimit

import (
	"net"
	"sync"
	"sync/atomic"
)

// Listener is a net.Listener that holds at most a fixed number of accepted connections open.
type Listener struct {
	net.Listener
	sem  chan struct{}
	done chan struct{}
	once sync.Once
	open atomic.Int64
	peak atomic.Int64
}

// Listen returns ln limited to n open connections (n < 1 is taken as 1).
func Listen(ln net.Listener, n int) *Listener {
	return &Listener{Listener: ln, sem: make(chan struct{}, max(n, 1)), done: make(chan struct{})}
}

// Accept waits until fewer than the limit are open, then accepts the next connection.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	n := l.open.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &conn{Conn: c, l: l}, nil
}

// Close closes the listener; an Accept waiting for a free slot returns net.ErrClosed.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// Limit is the most connections held open at once.
func (l *Listener) Limit() int { return cap(l.sem) }

// Open is the number of accepted connections not yet closed.
func (l *Listener) Open() int64 { return l.open.Load() }

// Peak is the most connections that were open at once.
func (l *Listener) Peak() int64 { return l.peak.Load() }

// conn gives its slot back when closed (once, however often it is closed).
type conn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		<-c.l.sem
	})
	return err
}
