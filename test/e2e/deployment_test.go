package e2e

// TestDeployment follows docs/deployment.md: the roles as separate OS
// processes, every one reading deploy/examples/deployment.yaml as it is
// committed, on the real broker and PostgreSQL.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/dbtest"
	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// deploymentFile is the configuration docs/deployment.md deploys.
const deploymentFile = "../../deploy/examples/deployment.yaml"

// rebalanceMargin is what docs/operations.md ("Rebalances") allows beyond
// kafka.session_timeout for a dead member's partitions to reach a
// survivor: its next heartbeat (a tenth of the timeout) and the rejoin.
const rebalanceMargin = 5 * time.Second

// TestDeployment: registry, intake, two processors and a sink into
// PostgreSQL and Parquet, each a process started as docs/deployment.md
// says, from deploy/examples/deployment.yaml; the environment overrides
// only what a test run must have of its own (brokers, topics, groups,
// addresses, the database, the file root). `status` names the sinks
// before they run and finds every role after; the dashboard shows the
// intake of dashboard.health. Under a steady beacon load one processor is
// SIGKILLed: the survivor must log the partitions it took over within
// kafka.session_timeout + rebalanceMargin, and every acknowledged event must
// be in PostgreSQL exactly once, and in Parquet.
func TestDeployment(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	db, dsn := dbtest.Postgres(t)
	bin, err := plainBuild()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(deploymentFile)
	if err != nil {
		t.Fatal(err)
	}
	file, err := config.Parse(data) // the file's own values, no environment
	if err != nil {
		t.Fatalf("%s: %v", deploymentFile, err)
	}
	session := file.Kafka.SessionTimeout
	logLoad(t, "at the start")
	t.Cleanup(func() { logLoad(t, "at the end") })

	prefix := sinkPrefix(t, "deploy")
	dir := t.TempDir()
	regAddr, intakeAddr, dashAddr, sinkMetrics := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	procMetrics := []string{freeAddr(t), freeAddr(t)}
	raw, schemaTopic := prefix+"-raw", prefix+"_Generic"
	procGroup, sinkGroup := prefix+"-processor", prefix+"-sink"
	filesDir := filepath.Join(dir, "files")
	env := []string{
		"EVENTLOGGING_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"EVENTLOGGING_KAFKA_REPLICATION_FACTOR=-1", // one broker, not three
		"EVENTLOGGING_REGISTRY_URL=http://" + regAddr,
		"EVENTLOGGING_REGISTRY_LISTEN=" + regAddr,
		"EVENTLOGGING_REGISTRY_SELF_URL=http://" + regAddr,
		"EVENTLOGGING_REGISTRY_TOPIC=" + prefix + "-schemas",
		"EVENTLOGGING_REGISTRY_IMPORT_DIR=../../examples/schemas",
		"EVENTLOGGING_INTAKE_LISTEN=" + intakeAddr,
		"EVENTLOGGING_INTAKE_RAW_TOPIC=" + raw,
		"EVENTLOGGING_INTAKE_SPOOL_DIR=" + filepath.Join(dir, "spool"),
		"EVENTLOGGING_PROCESS_GROUP=" + procGroup,
		"EVENTLOGGING_PROCESS_TOPIC_TEMPLATE=" + prefix + "_{schema}",
		"EVENTLOGGING_PROCESS_MIXED_TOPIC=" + prefix + "-mixed",
		"EVENTLOGGING_PROCESS_ERROR_TOPIC=" + prefix + "-errors",
		"EVENTLOGGING_PROCESS_IP_KEY_TOPIC=" + prefix + "-ipkey",
		"EVENTLOGGING_SINK_SQL=" + dsn,
		"EVENTLOGGING_SINK_FILES=" + filesDir,
		"EVENTLOGGING_SINK_TOPICS=^" + prefix + "_.+",
		"EVENTLOGGING_SINK_GROUP=" + sinkGroup,
		"EVENTLOGGING_SINK_ERROR_TOPIC=" + prefix + "-sinkerrors",
		"EVENTLOGGING_SINK_METRICS_LISTEN=" + sinkMetrics,
		"EVENTLOGGING_DASHBOARD_LISTEN=" + dashAddr,
		"EVENTLOGGING_DASHBOARD_HEALTH=intake=http://" + intakeAddr + "/readyz,registry=http://" + regAddr + "/",
		"EVENTLOGGING_LOG_FORMAT=json", // as the file says, from the first line on
	}
	role := func(name string, extraEnv []string, args ...string) *service {
		t.Helper()
		s, err := launchPlain(t, name, append(slices.Clone(env), extraEnv...), append(args, "--config", deploymentFile)...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	adm := mustAdmin(t, brokers)

	// 2. The registry, with the schema folder imported.
	registry := role("registry", nil, "registry")
	waitFor(t, 90*time.Second, "the registry to serve Generic revision 13", func() bool {
		return alive(registry) && httpStatus(t, "http://"+regAddr+"/schemas/ids/13") == http.StatusOK
	})
	// 3. The intake.
	intake := role("intake", nil, "intake")
	waitReady(t, "http://"+intakeAddr)
	// 4. Two processors (on one host here: each its own /metrics).
	// --raw-topic: process.inputs is a list, which no variable sets.
	procs := make([]*service, 2)
	for k := range procs {
		procs[k] = role(fmt.Sprintf("processor %c", 'A'+k), []string{"EVENTLOGGING_PROCESS_METRICS_LISTEN=" + procMetrics[k]}, "process", "--raw-topic", raw)
	}
	waitGroupMembers(t.Context(), t, adm, procGroup, 2)
	for k, addr := range procMetrics {
		if code := httpStatus(t, "http://"+addr+"/metrics"); code != http.StatusOK {
			t.Errorf("processor %c: /metrics on process.metrics_listen %s answered %d", 'A'+k, addr, code)
		}
	}

	// 6, before 5: status expects the sinks the file enables, and says
	// they are missing.
	st, code := deployStatus(t, bin, env, dir)
	if code != 1 {
		t.Errorf("status without a sink: exit status %d, want 1", code)
	}
	for _, r := range []string{"sink-sql", "sink-files"} {
		if !slices.Contains(st.Missing, r) {
			t.Errorf("status without a sink: missing %v lacks %s", st.Missing, r)
		}
	}
	for _, r := range []string{"intake", "registry", "processor"} {
		if h, ok := st.role(r); !ok || !h.Healthy || !h.Expected {
			t.Errorf("status without a sink: role %s = %+v (found %t), want expected and healthy", r, h, ok)
		}
	}

	// 5. The sink, into PostgreSQL and Parquet; 6. the dashboard.
	sink := role("sink", nil, "sink")
	dash := role("dashboard", nil, "dashboard")

	// The load: beacons of Generic revision 13, each numbered.
	const rate = 400
	s := newSender("http://"+intakeAddr, prefix, 8, rate, rate*240)
	loadDone := s.offerInBackground(t, time.Hour)

	// Every expected role is up once the sink's groups have joined (they
	// do when the first schema topic exists).
	waitFor(t, 90*time.Second, "status to find every expected role up", func() bool {
		st, code = deployStatus(t, bin, env, dir)
		for _, r := range st.Roles {
			if r.Expected && !r.Healthy {
				return false
			}
		}
		return len(st.Roles) > 0
	})
	if code != 0 {
		// Only consumer groups of other runs on the shared broker may be
		// down now: every expected role is up.
		t.Logf("status exit status %d, roles down that this deployment does not expect: %v", code, st.Missing)
	}
	for _, r := range []string{"intake", "registry", "processor", "sink-sql", "sink-files"} {
		if h, ok := st.role(r); !ok || !h.Expected {
			t.Errorf("status: role %s = %+v (found %t), want an expected role", r, h, ok)
		}
	}
	if code := httpStatus(t, "http://"+sinkMetrics+"/metrics"); code != http.StatusOK {
		t.Errorf("sink: /metrics on sink.metrics_listen %s answered %d", sinkMetrics, code)
	}
	waitFor(t, 30*time.Second, "the dashboard to show the intake of dashboard.health healthy", func() bool {
		var ov struct {
			Roles []deployRole `json:"roles"`
		}
		if !getJSON(t, "http://"+dashAddr+"/api/overview", &ov) {
			return false
		}
		for _, r := range ov.Roles {
			if r.Role == "intake" && r.Healthy && r.Expected && r.URL == "http://"+intakeAddr+"/readyz" {
				return true
			}
		}
		return false
	})

	// 7. A processor dies: SIGKILL, no leaving the group.
	for time.Since(s.start) < 8*time.Second {
		time.Sleep(100 * time.Millisecond) // load before the kill (load shape)
	}
	victim, survivor := procs[0], procs[1]
	held := ownedPartitions(victim.logs())
	if len(held) == 0 {
		t.Fatalf("processor A logged no partition it owns:\n%s", tail(victim.logs(), 3000))
	}
	killedAt := time.Now()
	victim.kill()
	t.Logf("processor A SIGKILLed %.1fs into the load, holding %v", killedAt.Sub(s.start).Seconds(), held)

	var took partitionsLog
	waitFor(t, session+time.Minute, "the survivor to log the dead processor's partitions assigned", func() bool {
		for _, l := range rebalanceLines(survivor.logs()) {
			if l.Msg == "partitions assigned" && l.Time.After(killedAt) && l.Group == procGroup {
				took = l
				return true
			}
		}
		return false
	})
	recovery := took.Time.Sub(killedAt)
	t.Logf("survivor logged %q %v after the kill (kafka.session_timeout %v)", took.Partitions, recovery.Round(10*time.Millisecond), session)
	if got := parsePartitions(took.Partitions); !containsAll(got, held) {
		t.Errorf("the survivor took over %v, not every partition the dead one held %v", got, held)
	}
	if recovery > session+rebalanceMargin {
		t.Errorf("the dead processor's partitions moved %v after the kill, want within kafka.session_timeout %v + %v (docs/operations.md)", recovery, session, rebalanceMargin)
	}
	if recovery < session/2 {
		t.Errorf("the partitions moved %v after the kill, before the session timeout %v could expire: not the coordinator's doing?", recovery, session)
	}

	// Load on after the rebalance, then the verdict.
	time.Sleep(5 * time.Second) // load after the recovery (load shape)
	s.halt()
	<-loadDone
	t.Logf("load: %s", s.summary())
	d := waitStoredPostgres(t, db, s, 3*time.Minute)
	t.Logf("PostgreSQL: %v", d)
	d.check(t)
	if d.acked < rate*10 {
		t.Errorf("only %d beacons acknowledged", d.acked)
	}

	// Parquet: every Kafka record of the schema topic once — the batch the
	// survivor processed again is there twice (same uuid), as in the
	// topic; every acknowledged event at least once.
	filesGroup := sinkGroup + "-files"
	waitFor(t, 2*time.Minute, "the file sink to consume the schema topic", func() bool {
		ends, err := adm.ListEndOffsets(t.Context(), schemaTopic)
		if err != nil || ends.Error() != nil {
			return false
		}
		lag, err := groupLag(t.Context(), adm, filesGroup, ends, schemaTopic)
		return err == nil && lag == 0
	})
	records := countRecords(t, brokers, schemaTopic)
	sink.stop(t) // SIGTERM publishes the open files
	perID := map[int]int{}
	rows := parquetRows(t, filepath.Join(filesDir, schemaTopic))
	for _, r := range rows {
		ev, _ := r["event"].(map[string]any)
		id, err := strconv.Atoi(fmt.Sprint(ev["articleId"]))
		if err != nil || fmt.Sprint(r["wiki"]) != prefix {
			t.Fatalf("a Parquet row not of this run: %v", r)
		}
		perID[id]++
	}
	missing := 0
	for i := range s.status {
		if s.isAcked(i) && perID[i] == 0 {
			missing++
		}
	}
	if missing > 0 || int64(len(rows)) != records {
		t.Errorf("Parquet: %d rows for the %d records of %s, %d acknowledged events missing", len(rows), records, schemaTopic, missing)
	}
	t.Logf("Parquet: %d rows, one per record of %s (%d records beyond the %d distinct events, re-processed after the kill)", len(rows), schemaTopic, records-int64(len(perID)), len(perID))

	for _, r := range []*service{dash, survivor, intake, registry} {
		r.stop(t)
	}
}

// deployRole is a role as status --json and the dashboard's API show it.
type deployRole struct {
	Role     string `json:"role"`
	Healthy  bool   `json:"healthy"`
	Expected bool   `json:"expected"`
	Group    string `json:"group"`
	URL      string `json:"url"`
	Detail   string `json:"detail"`
}

// deployStatusOut is what the test reads of status --json.
type deployStatusOut struct {
	Healthy bool         `json:"healthy"`
	Missing []string     `json:"missing"`
	Roles   []deployRole `json:"roles"`
}

func (o deployStatusOut) role(name string) (deployRole, bool) {
	for _, r := range o.Roles {
		if r.Role == name {
			return r, true
		}
	}
	return deployRole{}, false
}

// deployStatus runs `eventlogging status --config deployment.yaml --json`
// as docs/deployment.md does, and returns its JSON and exit status.
// --data-dir names an empty folder: no local standalone is looked for.
func deployStatus(t *testing.T, bin string, env []string, dir string) (deployStatusOut, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, "status", "--config", deploymentFile, "--json", "--interval", "500ms", "--errors", "0", "--data-dir", filepath.Join(dir, "no-standalone"))
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("status: %v", err)
	}
	var st deployStatusOut
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status --json (exit status %d): %v\n%s\n%s", code, err, out, stderr.String())
	}
	if code != 0 && !strings.Contains(stderr.String(), " down: ") {
		t.Errorf("status exit status %d without naming the roles down: %s", code, stderr.String())
	}
	return st, code
}

// httpStatus GETs u and returns the status code, 0 when it does not answer.
func httpStatus(t *testing.T, u string) int {
	t.Helper()
	status, _, err := get(t.Context(), u)
	if err != nil {
		return 0
	}
	return status
}

// getJSON GETs u and decodes its JSON body into v; false on any failure.
func getJSON(t *testing.T, u string, v any) bool {
	t.Helper()
	status, body, err := get(t.Context(), u)
	return err == nil && status == http.StatusOK && json.Unmarshal([]byte(body), v) == nil
}

// partitionsLog is one rebalance line of a role's JSON log.
type partitionsLog struct {
	Time       time.Time `json:"time"`
	Msg        string    `json:"msg"`
	Group      string    `json:"group"`
	Partitions string    `json:"partitions"`
}

// rebalanceLines returns the rebalance lines of a JSON log, in order.
func rebalanceLines(log string) []partitionsLog {
	var out []partitionsLog
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var l partitionsLog
		if json.Unmarshal(line, &l) == nil && strings.HasPrefix(l.Msg, "partitions ") {
			out = append(out, l)
		}
	}
	return out
}

// ownedPartitions replays a member's rebalance lines: what it owns now.
func ownedPartitions(log string) []string {
	owned := map[string]bool{}
	for _, l := range rebalanceLines(log) {
		for _, p := range parsePartitions(l.Partitions) {
			owned[p] = l.Msg == "partitions assigned"
		}
	}
	var out []string
	for p, ok := range owned {
		if ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// parsePartitions reads "topic:0,1 other:2" as ["topic/0", "topic/1", "other/2"].
func parsePartitions(s string) []string {
	var out []string
	for tp := range strings.FieldsSeq(s) {
		topic, ps, _ := strings.Cut(tp, ":")
		for p := range strings.SplitSeq(ps, ",") {
			out = append(out, topic+"/"+p)
		}
	}
	return out
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// waitStoredPostgres polls PostgreSQL until every event s acknowledged has
// a row in "Generic_13", or no row was added for 30 s, or timeout, and
// returns the verdict. The table and its columns are quoted: PostgreSQL
// folds unquoted names to lower case.
func waitStoredPostgres(t *testing.T, db *sql.DB, s *sender, timeout time.Duration) delivery {
	t.Helper()
	start := time.Now()
	acked := s.ackedIDs()
	var (
		got      map[int]int
		last     = -1
		lastMove = time.Now()
	)
	for {
		var err error
		got, err = postgresCounts(t.Context(), db, s.run)
		if err != nil && !strings.Contains(err.Error(), "does not exist") { // the table comes with the first row
			t.Fatalf("reading PostgreSQL: %v", err)
		}
		if len(got) != last {
			last, lastMove = len(got), time.Now()
		}
		if missing(got, acked) == 0 || time.Since(lastMove) > 30*time.Second || time.Since(start) > timeout {
			break
		}
		time.Sleep(500 * time.Millisecond) // polling interval
	}
	return s.verdict(got, acked, start)
}

// postgresCounts maps each articleId of the run to its number of rows.
func postgresCounts(ctx context.Context, db *sql.DB, run string) (map[int]int, error) {
	return articleCounts(ctx, db, `SELECT "event_articleId", count(*) FROM "Generic_13" WHERE wiki = $1 GROUP BY 1`, run)
}
