package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	driver "github.com/go-sql-driver/mysql"
)

// counters are the SHOW GLOBAL STATUS variables reported, in this order; those a server
// does not have are left out (MariaDB counts rows in Handler_*, MySQL also in Innodb_rows_*).
// A client round trip is a statement (Questions, which counts each execution of a prepared
// statement) or the preparation of one (Com_stmt_prepare); closing a prepared statement has
// no answer.
var counters = []string{
	"Questions", "Com_stmt_prepare", "Com_select", "Com_insert", "Com_update", "Com_begin", "Com_commit", "Com_rollback",
	"Handler_read_key", "Handler_read_next", "Handler_write", "Handler_update",
	"Innodb_rows_read", "Innodb_rows_inserted", "Innodb_rows_updated",
	"Innodb_log_writes", "Innodb_data_fsyncs", "Bytes_received", "Bytes_sent",
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const userHZ = 100

// proc names a process whose CPU time is measured.
type proc struct {
	name string
	pid  int
}

// probe samples what a run costs: the database server's status counters and the CPU time
// of processes.
type probe struct {
	db    *sql.DB // nil: no database
	procs []proc
}

// sample is one reading of a probe.
type sample struct {
	status map[string]int64         // counter → value
	cpu    map[string]time.Duration // name → user+system CPU of its processes
	names  []string                 // the names of cpu, in the order given
}

// openProbe connects to the database at dsn ("" for none) and checks that every process
// can be read.
func openProbe(dsn string, procs []proc) (*probe, error) {
	p := &probe{procs: procs}
	for _, pr := range procs {
		if _, err := cpuTime(pr.pid); err != nil {
			return nil, fmt.Errorf("-cpu %s=%d: %w", pr.name, pr.pid, err)
		}
	}
	if dsn == "" {
		return p, nil
	}
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("-db-dsn: %w", err)
	}
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("-db-dsn: %w", err)
	}
	p.db = sql.OpenDB(conn)
	p.db.SetMaxOpenConns(1)
	return p, nil
}

func (p *probe) close() {
	if p.db != nil {
		p.db.Close()
	}
}

// sample reads the counters and CPU times now.
func (p *probe) sample(ctx context.Context) (sample, error) {
	s := sample{status: map[string]int64{}, cpu: map[string]time.Duration{}}
	for _, pr := range p.procs {
		t, err := cpuTime(pr.pid)
		if err != nil {
			return s, fmt.Errorf("CPU time of %s (pid %d): %w", pr.name, pr.pid, err)
		}
		if _, seen := s.cpu[pr.name]; !seen {
			s.names = append(s.names, pr.name)
		}
		s.cpu[pr.name] += t
	}
	if p.db == nil {
		return s, nil
	}
	rows, err := p.db.QueryContext(ctx, "SHOW GLOBAL STATUS")
	if err != nil {
		return s, fmt.Errorf("database status: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return s, fmt.Errorf("database status: %w", err)
		}
		if v, err := strconv.ParseInt(value, 10, 64); err == nil {
			s.status[name] = v
		}
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("database status: %w", err)
	}
	return s, nil
}

// cpuTime returns the user and system CPU time process pid has used, all its threads.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces; utime and stime are
	// fields 14 and 15, the 12th and 13th after it.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// report writes what the run between before and after cost, per envelope and per request.
func report(w io.Writer, before, after sample, envelopes, requests int64) {
	if envelopes == 0 || requests == 0 || len(after.names) == 0 && len(after.status) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cost\ttotal\tper request\tper envelope\t")
	for _, name := range after.names {
		d := after.cpu[name] - before.cpu[name]
		fmt.Fprintf(tw, "%s CPU (µs)\t%.0f\t%.1f\t%.1f\t\n", name, us(d), us(d)/float64(requests), us(d)/float64(envelopes))
	}
	for _, c := range counters {
		a, ok := after.status[c]
		if !ok {
			continue
		}
		d := float64(a - before.status[c])
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.3f\t\n", c, d, d/float64(requests), d/float64(envelopes))
	}
	tw.Flush()
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
