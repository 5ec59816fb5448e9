package export

import (
	"context"
	"sync"

	"github.com/evident-log/evident/ledger"
)

// treeCache keeps the whole chain tree of a chain's latest seal, up to a budget of bytes,
// the least recently used going first.
type treeCache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	tick   uint64
	m      map[string]*cachedTree // by chain
}

type cachedTree struct {
	size  uint64 // the sealed size the tree is of
	tree  *ledger.FullTree
	ready chan struct{} // closed once tree (or err) is set
	err   error
	last  uint64
	bytes int64
}

// get returns the tree of chain at size, building it with build on a miss. Concurrent
// callers for the same tree wait for one build. ok is false when the tree would not fit the
// budget: the caller then proves in one pass over the chain.
func (c *treeCache) get(ctx context.Context, chain string, size uint64, build func() (*ledger.FullTree, error)) (*ledger.FullTree, bool, error) {
	bytes := int64(ledger.FullTreeBytes(size))
	c.mu.Lock()
	if bytes > c.budget {
		c.mu.Unlock()
		return nil, false, nil
	}
	c.tick++
	e, hit := c.m[chain]
	if hit && e.size != size {
		c.drop(chain, e)
		hit = false
	}
	if !hit {
		e = &cachedTree{size: size, ready: make(chan struct{}), bytes: bytes}
		c.m[chain] = e
		c.used += bytes
		c.evict(chain)
	}
	e.last = c.tick
	c.mu.Unlock()
	if !hit {
		e.tree, e.err = build()
		close(e.ready)
		if e.err != nil {
			c.mu.Lock()
			if c.m[chain] == e {
				c.drop(chain, e)
			}
			c.mu.Unlock()
		}
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	if e.err != nil {
		return nil, false, e.err
	}
	return e.tree, true, nil
}

// drop forgets chain's entry; c.mu is held.
func (c *treeCache) drop(chain string, e *cachedTree) {
	delete(c.m, chain)
	c.used -= e.bytes
}

// evict drops the least recently used trees other than keep's until the budget holds; c.mu
// is held.
func (c *treeCache) evict(keep string) {
	for c.used > c.budget {
		victim, oldest := "", ^uint64(0)
		for ch, e := range c.m {
			if ch != keep && e.last < oldest {
				victim, oldest = ch, e.last
			}
		}
		if victim == "" {
			return
		}
		c.drop(victim, c.m[victim])
	}
}
