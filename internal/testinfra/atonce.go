package testinfra

import "sync"

// AtOnce runs fn(0) … fn(n-1), each on its own goroutine, releases them together once all
// have started, and returns when all have returned: how tests make requests race.
func AtOnce(n int, fn func(i int)) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-start
			fn(i)
		})
	}
	ready.Wait()
	close(start)
	done.Wait()
}
