package engines

import (
	"bufio"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCommit commits envelopes durably: each of chains goroutines owns
// one chain and commits its batches one after the other. One b.N iteration is
// one envelope, rounded up to whole rounds of one batch per chain, so every
// case writes full batches; read envelopes/s and ns/envelope, not ns/op.
func BenchmarkCommit(b *testing.B) {
	for _, name := range Names {
		b.Run(name, func(b *testing.B) {
			for _, batch := range []int{1, 10, 100, 1000} {
				for _, chains := range []int{1, 16, 64} {
					b.Run(fmt.Sprintf("batch=%d/chains=%d", batch, chains), func(b *testing.B) {
						benchCommit(b, name, batch, chains)
					})
				}
			}
		})
	}
}

func benchCommit(b *testing.B, name string, batch, chains int) {
	round := batch * chains
	rounds := (b.N + round - 1) / round
	e, err := Open(name, b.TempDir(), true)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	// The envelopes are built before the clock starts.
	work := make([][]Envelope, chains)
	names := make([][]byte, chains)
	for ci := range chains {
		names[ci] = ChainName(ci)
		work[ci] = make([]Envelope, rounds*batch)
		for s := range work[ci] {
			work[ci][s] = NewEnvelope(ci, names[ci], uint64(s))
		}
	}
	errs := make(chan error, chains)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for ci := range chains {
		wg.Add(1)
		go func() {
			defer wg.Done()
			envs := work[ci]
			for s := 0; s < len(envs); s += batch {
				bt := envs[s : s+batch]
				last := &bt[len(bt)-1]
				if err := e.Commit(names[ci], bt, StateValue(names[ci], last.Seq, last.Link), true); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	total := float64(rounds * round)
	b.ReportMetric(total/elapsed.Seconds(), "envelopes/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/total, "ns/envelope")
}

// verifiesPerOp makes one b.N iteration of BenchmarkEd25519Verify several
// verifies, so that the fixed -benchtime=Nx of the whole run times it long
// enough.
const verifiesPerOp = 20

// BenchmarkEd25519Verify is the all-core ceiling: crypto/ed25519.Verify of a
// ~700-byte message on every core (b.RunParallel); one op is verifiesPerOp
// verifies, read verifies/s.
func BenchmarkEd25519Verify(b *testing.B) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	env := NewEnvelope(0, ChainName(0), 0)
	msg := env.Value
	sig := ed25519.Sign(priv, msg)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for range verifiesPerOp {
				if !ed25519.Verify(pub, msg, sig) {
					panic("bad signature")
				}
			}
		}
	})
	elapsed := time.Since(start)
	b.ReportMetric(float64(b.N*verifiesPerOp)/elapsed.Seconds(), "verifies/s")
	b.ReportMetric(float64(len(msg)), "msg-bytes")
}

// Lookup scale: LookupChains chains of LookupPerChain envelopes each.
const (
	LookupChains = 16
	loadBatch    = 1000
)

// LookupPerChain is 62,500 (LookupN = 1,000,000) unless
// ENGINES_LOOKUP_PER_CHAIN sets it, for a quick smoke run.
var LookupPerChain = func() int {
	if n, err := strconv.Atoi(os.Getenv("ENGINES_LOOKUP_PER_CHAIN")); err == nil && n > 100 {
		return n
	}
	return 62_500
}()

// LookupN is the number of envelopes loaded.
var LookupN = LookupChains * LookupPerChain

// LoadResult is what the loading child process reports.
type LoadResult struct {
	Seconds       float64
	DiskBytes     int64 // allocated (du) after flush and close
	PeakHeapInuse uint64
	PeakSys       uint64
	PeakRSS       uint64 // VmHWM of the child
}

var (
	lookupOnce = map[string]*sync.Once{"pebble": {}, "badger": {}}
	lookupDirs = map[string]string{}
	lookupRes  = map[string]LoadResult{}
	lookupErr  = map[string]error{}
	lookupRoot string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if lookupRoot != "" {
		os.RemoveAll(lookupRoot)
	}
	os.Exit(code)
}

// TestLoadChild is the load of BenchmarkLookup, run in a child process of the
// test binary so that its peak memory is the load's alone. It skips unless
// ENGINES_LOAD is set to "engine:dir".
func TestLoadChild(t *testing.T) {
	spec := os.Getenv("ENGINES_LOAD")
	if spec == "" {
		t.Skip("run by BenchmarkLookup")
	}
	name, dir, _ := strings.Cut(spec, ":")
	runtime.GC()
	var peakHeap, peakSys uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peakHeap = max(peakHeap, ms.HeapInuse)
			peakSys = max(peakSys, ms.Sys)
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	start := time.Now()
	e, err := Open(name, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := Load(e, LookupChains, LookupPerChain, loadBatch); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	secs := time.Since(start).Seconds()
	close(stop)
	<-done
	res := LoadResult{Seconds: secs, DiskBytes: du(t, dir), PeakHeapInuse: peakHeap, PeakSys: peakSys, PeakRSS: vmHWM()}
	out, _ := json.Marshal(res)
	fmt.Printf("LOADRESULT %s\n", out)
}

func du(t testing.TB, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func vmHWM() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// loaded loads LookupN envelopes into a directory for engine name, once per
// process, in a child process, and returns the directory and the load's figures.
func loaded(b *testing.B, name string) (string, LoadResult) {
	lookupOnce[name].Do(func() {
		if lookupRoot == "" {
			root, err := os.MkdirTemp("", "engines-lookup-")
			if err != nil {
				lookupErr[name] = err
				return
			}
			lookupRoot = root
		}
		dir := filepath.Join(lookupRoot, name)
		cmd := exec.Command(os.Args[0], "-test.run=^TestLoadChild$", "-test.count=1", "-test.timeout=20m")
		cmd.Env = append(os.Environ(), "ENGINES_LOAD="+name+":"+dir)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			lookupErr[name] = fmt.Errorf("load child: %v\n%s", err, out)
			return
		}
		for line := range strings.Lines(string(out)) {
			if js, ok := strings.CutPrefix(strings.TrimSpace(line), "LOADRESULT "); ok {
				var res LoadResult
				lookupErr[name] = json.Unmarshal([]byte(js), &res)
				lookupRes[name] = res
				lookupDirs[name] = dir
				return
			}
		}
		lookupErr[name] = fmt.Errorf("load child printed no result:\n%s", out)
	})
	if err := lookupErr[name]; err != nil {
		b.Fatal(err)
	}
	return lookupDirs[name], lookupRes[name]
}

// BenchmarkLookup measures reads after loading LookupN envelopes (one-time
// setup per engine, in a child process; non-sync big batches): a Get of a
// missing record-id key, of a present one, and a scan of 100 entries of one
// chain from a seq. Its "load" case reports the load's figures: envelopes/s
// of the load, disk bytes per envelope, peak heap in use, Sys and RSS.
func BenchmarkLookup(b *testing.B) {
	for _, name := range Names {
		b.Run(name, func(b *testing.B) {
			dir, res := loaded(b, name)
			b.Run("load", func(b *testing.B) {
				for range b.N {
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(LookupN)/res.Seconds, "load-envelopes/s")
				b.ReportMetric(float64(res.DiskBytes)/float64(LookupN), "disk-B/envelope")
				b.ReportMetric(float64(res.PeakHeapInuse)/(1<<20), "peak-heapinuse-MiB")
				b.ReportMetric(float64(res.PeakSys)/(1<<20), "peak-sys-MiB")
				b.ReportMetric(float64(res.PeakRSS)/(1<<20), "peak-rss-MiB")
			})
			e, err := Open(name, dir, true)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			r := rand.New(rand.NewPCG(1, 2))
			const nkeys = 1 << 16
			present := make([][]byte, nkeys)
			missing := make([][]byte, nkeys)
			starts := make([][2][]byte, nkeys)
			for i := range nkeys {
				ci := r.IntN(LookupChains)
				chain := ChainName(ci)
				present[i] = RecordKey(chain, RecordID(ci, uint64(r.IntN(LookupPerChain))))
				missing[i] = RecordKey(chain, RecordID(ci, uint64(LookupPerChain+r.IntN(1<<40))))
				starts[i] = [2][]byte{EntryPrefix(chain), EntryKey(chain, uint64(r.IntN(LookupPerChain-100)))}
			}
			b.Run("get-missing", func(b *testing.B) {
				for i := range b.N {
					found, _, err := e.Get(missing[i%nkeys])
					if err != nil || found {
						b.Fatal("missing key:", found, err)
					}
				}
			})
			b.Run("get-present", func(b *testing.B) {
				for i := range b.N {
					found, n, err := e.Get(present[i%nkeys])
					if err != nil || !found || n != 8 {
						b.Fatal("present key:", found, n, err)
					}
				}
			})
			b.Run("scan100", func(b *testing.B) {
				for i := range b.N {
					s := starts[i%nkeys]
					n, err := e.Scan(s[0], s[1], 100)
					if err != nil || n != 100 {
						b.Fatal("scan:", n, err)
					}
				}
			})
		})
	}
}
