package durable

import "errors"

// ErrLocked is returned by Lock when another open file description (another process, or
// another Lock in this one) holds the lock.
var ErrLocked = errors.New("locked by another process")
