package e2e

// The harness of the reliability tests (reliability_*_test.go, issue 8): a
// rig of intake, processors and SQLite sink as separate OS processes on one
// configuration, a paced beacon sender that records the answer to every
// event, a sampler of the pipeline's progress (answers, raw and output topic
// ends, consumer lag, rows stored), and the check that every acknowledged
// event is in SQL exactly once. docs/reliability.md tabulates what the tests
// printed.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// envLongFaults turns on the long variants: more kills, longer outages and
// overload, a rolling restart of the cluster.
const envLongFaults = "EVENTLOGGING_LONG_FAULTS"

// longFaults reports whether the long variants run.
func longFaults() bool { return os.Getenv(envLongFaults) == "1" }

// pick returns long under EVENTLOGGING_LONG_FAULTS=1, else short.
func pick[T any](short, long T) T {
	if longFaults() {
		return long
	}
	return short
}

// Fixed ports of the reliability tests' own brokers; 39500–39599 is theirs.
const (
	reliabilityBrokerPort = 39592 // a single broker the tests stop and start (controller +1)
	clusterBasePort       = 39510 // scripts/kafka-cluster.sh: clients 39511-3, controllers 39521-3
)

// faultPass skips a fault test under the race detector: the fault tests
// measure recovery times, latency and memory of separate processes and
// run one after another in scripts/test.sh's pass without -race (their
// roles are built without it anyway, see plainBuild), not again beside
// every other package's tests in the -race pass.
func faultPass(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("fault test: scripts/test.sh runs it in its pass without -race")
	}
}

// plainBuild compiles the eventlogging command without the race detector:
// these tests measure throughput, recovery time and memory, which the race
// detector distorts several times over. The binary goes to one fixed path
// (renamed into place, so a process still running an older build keeps
// it), not a new temporary folder per run.
var plainBuild = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(os.TempDir(), "eventlogging-reliability-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "build-*")
	if err != nil {
		return "", err
	}
	f.Close()
	out, err := exec.CommandContext(context.Background(), "go", "build", "-o", f.Name(), cmdDir).CombinedOutput()
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	// One binary per test process: a shared name let a concurrent run
	// from another work tree replace it under this one's restarts.
	bin := filepath.Join(dir, fmt.Sprintf("eventlogging-%d", os.Getpid()))
	if err := os.Rename(f.Name(), bin); err != nil {
		return "", err
	}
	return bin, nil
})

// TestMain removes this process's binary after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	_ = os.Remove(filepath.Join(os.TempDir(), "eventlogging-reliability-bin", fmt.Sprintf("eventlogging-%d", os.Getpid())))
	os.Exit(code)
}

// launchPlain is startService with the binary built without -race, and
// an error instead of t.Fatal, so that a supervisor goroutine may call it.
func launchPlain(t *testing.T, name string, env []string, args ...string) (*service, error) {
	bin, err := plainBuild()
	if err != nil {
		return nil, err
	}
	s := newService(t, bin, name, env, args...)
	// Should the test binary be killed before its cleanup, its roles die
	// with it instead of running on.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.killAtCleanup(t, 3000, func() bool {
		n, _ := logsShown.LoadOrStore(t, new(atomic.Int32))
		return n.(*atomic.Int32).Add(1) <= 6
	})
	return s, nil
}

// logsShown counts, per test, the service logs shown on failure: a role
// restarted dozens of times would bury the test's own messages.
var logsShown sync.Map // *testing.T → *atomic.Int32

// alive reports whether the service's process still runs (not exited, not
// a zombie); nothing waits for it until the test kills or stops it.
func alive(s *service) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// logLoad logs the machine's load average: the figures the tests print
// depend on what else runs on the machine's cores.
func logLoad(t *testing.T, when string) {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err == nil {
		t.Logf("load average %s: %s", when, strings.Join(strings.Fields(string(b))[:3], " "))
	}
}

// memKiB returns a process's peak resident set size and its current
// anonymous resident memory in KiB (VmHWM and RssAnon of
// /proc/<pid>/status). The peak counts the pages of the executable read
// from its file, about 60 MiB of the eventlogging binary once it runs
// (shared, and given back under memory pressure); the anonymous part is
// the memory the process's data takes: Go's heap, stacks, SQLite's cache.
func memKiB(pid int) (hwm, anon int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmHWM":
			hwm = n
		case "RssAnon":
			anon = n
		}
	}
	return hwm, anon
}

// rigConfig shapes a rig.
type rigConfig struct {
	brokers []string
	// replication is kafka.replication_factor (-1: the broker's default).
	replication int
	// bufferRecords is intake.buffer_records; 0: the default.
	bufferRecords int
	// parallelism is process.parallelism; 0: the default (GOMAXPROCS).
	parallelism int
	// spoolDir is the intake's spool; "": a fresh temporary folder.
	spoolDir string
	// deliveryTimeout is intake.delivery_timeout; 0: the default.
	deliveryTimeout time.Duration
	// ack is intake.ack; "": the default (buffered).
	ack string
}

// rig is one pipeline: intake → raw topic → processors → <prefix>_Generic
// → SQL sink (SQLite), every role an OS process reading one configuration
// file, as a deployment would.
type rig struct {
	t                    *testing.T
	cfg                  rigConfig
	prefix               string // unique to the rig; also the sender's marker
	raw, schemaTopic     string
	procGroup, sinkGroup string
	config, dbPath, base string
	env                  []string
}

func newRig(t *testing.T, cfg rigConfig) *rig {
	t.Helper()
	prefix := sinkPrefix(t, "rel")
	logLoad(t, "at the start")
	t.Cleanup(func() { logLoad(t, "at the end") })
	dir := t.TempDir()
	if cfg.replication == 0 {
		cfg.replication = -1
	}
	if cfg.spoolDir == "" {
		cfg.spoolDir = filepath.Join(dir, "spool")
	}
	addr := freeAddr(t)
	r := &rig{
		t: t, cfg: cfg, prefix: prefix,
		raw: prefix + "-raw", schemaTopic: prefix + "_Generic",
		procGroup: prefix + "-processor", sinkGroup: prefix + "-sink-sql",
		config: filepath.Join(dir, "eventlogging.yaml"), dbPath: filepath.Join(dir, "events.db"),
		base: "http://" + addr,
	}
	var extra strings.Builder
	if cfg.bufferRecords > 0 {
		fmt.Fprintf(&extra, "  buffer_records: %d\n", cfg.bufferRecords)
	}
	if cfg.deliveryTimeout > 0 {
		fmt.Fprintf(&extra, "  delivery_timeout: %s\n", cfg.deliveryTimeout)
	}
	if cfg.ack != "" {
		fmt.Fprintf(&extra, "  ack: %s\n", cfg.ack)
	}
	pipelineConfig{
		brokers: cfg.brokers, prefix: prefix, listen: addr, spoolDir: cfg.spoolDir,
		kafka:   fmt.Sprintf("  partitions: 6\n  replication_factor: %d\n", cfg.replication),
		intake:  extra.String(),
		process: fmt.Sprintf("  ip_key_topic: %q\n  parallelism: %d\n", prefix+"-ipkey", cfg.parallelism),
		more:    "metrics:\n  listen: \"off\"\n  lag_interval: 1s\n",
	}.write(t, r.config)
	// The environment overrides the file (EVENTLOGGING_KAFKA_BROKERS may
	// name the suite's broker): set what this rig needs.
	r.env = []string{"EVENTLOGGING_KAFKA_BROKERS=" + strings.Join(cfg.brokers, ",")}
	return r
}

// The roles of a rig.
const (
	roleIntake    = "intake"
	roleProcessor = "process"
	roleSink      = "sink"
)

// launch starts one role; an intake is waited for until it answers
// /readyz. Errors instead of t.Fatal: a supervisor goroutine calls it.
func (r *rig) launch(role, name string) (*service, error) {
	args := []string{role, "--config", r.config}
	if role == roleSink {
		args = append(args, "--sql", "sqlite:"+r.dbPath)
	}
	s, err := launchPlain(r.t, name, r.env, args...)
	if err != nil || role != roleIntake {
		return s, err
	}
	return s, r.intakeReady(s)
}

// start is launch, failing the test on error.
func (r *rig) start(role, name string) *service {
	r.t.Helper()
	s, err := r.launch(role, name)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// intakeReady waits until the intake s answers /readyz; an error when s
// exits first or does not answer within 90 s.
func (r *rig) intakeReady(s *service) error {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(s) {
			return fmt.Errorf("%s exited during start-up:\n%s", s.name, tail(s.logs(), 3000))
		}
		if isReady(r.t.Context(), r.base) {
			return nil
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	return fmt.Errorf("%s: %s/readyz never answered 200", s.name, r.base)
}

// supervised is a role that is started again when it exits on its own,
// as systemd's Restart=always would: a test can then tell "a role died"
// (a failure of its own) apart from "events were lost". The test's own
// kills go through kill and restart.
type supervised struct {
	r          *rig
	role, name string
	mu         sync.Mutex
	cur        *service
	down       bool     // killed by the test, not to be restarted here
	exits      []string // the last log lines of each unexpected exit
	gen        int
}

// supervise starts role and watches it until the test ends.
func (r *rig) supervise(role, name string) *supervised {
	r.t.Helper()
	p := &supervised{r: r, role: role, name: name, cur: r.start(role, name), gen: 1}
	ctx := r.t.Context()
	go func() {
		wait := 500 * time.Millisecond
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait): // polling interval, backing off while restarts fail
			}
			p.mu.Lock()
			wait = 500 * time.Millisecond
			if !p.down && !alive(p.cur) {
				p.exits = append(p.exits, fmt.Sprintf("%s exited on its own:\n%s", p.cur.name, tail(p.cur.logs(), 1500)))
				p.gen++
				s, err := r.launch(role, fmt.Sprintf("%s (restart %d)", name, p.gen))
				if err != nil {
					p.exits = append(p.exits, err.Error())
				}
				if s != nil {
					p.cur = s
				}
				wait = min(time.Duration(len(p.exits))*time.Second, 8*time.Second)
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// kill SIGKILLs the role; it stays down until restart.
func (p *supervised) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	p.cur.kill()
}

// restart starts the role again after kill.
func (p *supervised) restart() {
	p.r.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.cur = p.r.start(p.role, fmt.Sprintf("%s (%d)", p.name, p.gen))
	p.down = false
}

// service is the running instance.
func (p *supervised) service() *service {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// unexpectedExits lists how the role died without being killed.
func (p *supervised) unexpectedExits() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.exits)
}

// stopAtCleanup runs `script stop` (script relative to the repository)
// with env when the test ends, whether it passed or not; a failure to stop
// fails the test.
func stopAtCleanup(t *testing.T, script string, env []string) {
	t.Cleanup(func() {
		cmd := exec.CommandContext(context.Background(), "../../"+script, "stop") // t.Context is done by now
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s stop: %v\n%s", script, err, out)
		}
	})
}

// superviseAll supervises a sink, a processor and an intake (roles[1] is
// the processor) and waits until the processor has joined its group.
func (r *rig) superviseAll() (roles []*supervised, adm *kadm.Client) {
	r.t.Helper()
	roles = []*supervised{r.supervise(roleSink, "sink"), r.supervise(roleProcessor, "processor"), r.supervise(roleIntake, "intake")}
	return roles, r.joined(1)
}

// joined waits until n processors are members of the rig's processor
// group, and returns an admin client on the rig's brokers.
func (r *rig) joined(n int) *kadm.Client {
	r.t.Helper()
	adm := r.admin()
	waitGroupMembers(r.t.Context(), r.t, adm, r.procGroup, n)
	return adm
}

// checkSurvived fails the test for every role that exited on its own, and
// then stops every role with SIGTERM (a clean exit required).
func checkSurvived(t *testing.T, roles ...*supervised) {
	t.Helper()
	for _, p := range roles {
		if exits := p.unexpectedExits(); len(exits) > 0 {
			t.Errorf("%s had to be restarted %d times; first exit: %s", p.name, len(exits), exits[0])
		}
	}
	if t.Failed() {
		return
	}
	for _, p := range roles {
		p.mu.Lock()
		p.down = true // a stop is not an exit to restart after
		s := p.cur
		p.mu.Unlock()
		s.stop(t)
	}
}

// admin is a kadm client on the rig's brokers, closed when the test ends.
func (r *rig) admin() *kadm.Client {
	r.t.Helper()
	return mustAdmin(r.t, r.cfg.brokers)
}

// openDB opens the sink's SQLite database for reading.
func (r *rig) openDB() *sql.DB {
	r.t.Helper()
	return openSQLite(r.t, r.dbPath)
}

// drained returns a check that the pipeline holds nothing in flight: the
// intake sees Kafka, its spool is empty, and neither consumer group lags.
func (r *rig) drained(adm *kadm.Client) func() bool {
	return func() bool {
		ctx, cancel := context.WithTimeout(r.t.Context(), 3*time.Second)
		defer cancel()
		m, err := r.intakeMetrics(ctx, "eventlogging_intake_spool_records", "eventlogging_intake_kafka_down")
		if err != nil || m["eventlogging_intake_spool_records"] != 0 || m["eventlogging_intake_kafka_down"] != 0 {
			return false
		}
		ends, err := adm.ListEndOffsets(ctx, r.raw, r.schemaTopic)
		if err != nil || ends.Error() != nil {
			return false
		}
		procLag, perr := groupLag(ctx, adm, r.procGroup, ends, r.raw)
		sinkLag, serr := groupLag(ctx, adm, r.sinkGroup, ends, r.schemaTopic)
		return perr == nil && serr == nil && procLag == 0 && sinkLag == 0
	}
}

// intakeMetrics reads unlabelled samples from the intake's /metrics; every
// name asked for must be there.
func (r *rig) intakeMetrics(ctx context.Context, names ...string) (map[string]float64, error) {
	_, page, err := get(ctx, r.base+"/metrics")
	if err != nil {
		return nil, err
	}
	got := map[string]float64{}
	for line := range strings.Lines(page) {
		name, value, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if ok && slices.Contains(names, name) {
			got[name], _ = strconv.ParseFloat(value, 64)
		}
	}
	for _, n := range names {
		if _, ok := got[n]; !ok {
			return nil, fmt.Errorf("intake /metrics: no %s", n)
		}
	}
	return got, nil
}
