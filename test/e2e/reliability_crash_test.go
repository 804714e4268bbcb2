package e2e

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// TestProcessCrashes: on the suite's broker, an intake (with its spool), two
// processors and the SQLite sink under a steady beacon load; a random one of
// them is SIGKILLed at a random moment and restarted (the intake on the same
// spool folder and address), 5 times (20 with EVENTLOGGING_LONG_FAULTS=1).
// Every event the intake answered 204 must be in SQL exactly once: the
// intake runs with intake.ack=kafka.
func TestProcessCrashes(t *testing.T) {
	faultPass(t)
	brokers := kafkatest.Brokers(t)
	kills := pick(5, 20)
	const rate = 1000
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 8))
	t.Logf("seed %d, %d kills, %d beacons/s", seed, kills, rate)

	// intake.ack=kafka: a 204 is sent once Kafka acknowledged the beacon
	// (or the spool holds it), so no answered beacon may be lost to a
	// SIGKILL of the intake. (With the default, buffered, a 204 means "in
	// the producer buffer", and a kill loses the last milliseconds' worth:
	// docs/reliability.md.)
	r := newRig(t, rigConfig{brokers: brokers, ack: "kafka"})
	names := []string{"intake", "processor A", "processor B", "sink"}
	roles := []*supervised{r.supervise(roleIntake, names[0]), r.supervise(roleProcessor, names[1]), r.supervise(roleProcessor, names[2]), r.supervise(roleSink, names[3])}
	adm := r.joined(2)

	db := r.openDB()
	s := newSender(r.base, r.prefix, 16, rate, rate*int(pick(90, 400)))
	loadDone := s.offerInBackground(t, time.Hour)
	// Every role is killed once, in a random order, then random ones.
	order := rng.Perm(len(roles))
	killed := map[string]int{}
	var intakeKills []time.Duration
	for k := range kills {
		time.Sleep(time.Duration(1500+rng.IntN(4000)) * time.Millisecond) // a random moment for the kill (load shape, not synchronisation)
		victim := rng.IntN(len(roles))
		if k < len(order) {
			victim = order[k]
		}
		at := time.Since(s.start)
		roles[victim].kill()
		killed[names[victim]]++
		if victim == 0 {
			intakeKills = append(intakeKills, at)
		}
		down := time.Duration(200+rng.IntN(2000)) * time.Millisecond
		time.Sleep(down) // the role stays dead a random while (fault shape)
		roles[victim].restart()
		t.Logf("kill %d at %.1fs: %s SIGKILLed, restarted after %v", k+1, at.Seconds(), names[victim], down)
	}
	time.Sleep(3 * time.Second) // load after the last restart (load shape)
	s.halt()
	<-loadDone
	t.Logf("load: %s", s.summary())

	d := waitStored(t, db, s, 3*time.Minute, r.drained(adm))
	dups := countRecords(t, brokers, r.schemaTopic) - int64(d.stored)
	t.Logf("after %d SIGKILLs %v: %v; %d duplicate capsules in the Generic topic from re-processing, absorbed by the sink's unique uuid", kills, killed, d, dups)

	if d.lost > 0 || d.duplicated > 0 {
		t.Errorf("%d acknowledged beacons lost (first %v), %d stored twice", d.lost, d.lostIDs[:min(len(d.lostIDs), 20)], d.duplicated)
		for _, id := range d.lostIDs[:min(len(d.lostIDs), 20)] {
			t.Logf("lost beacon %d answered at %v; intake SIGKILLs at %v", id, time.Duration(s.answered[id])*time.Millisecond, intakeKills)
		}
	}
	checkSurvived(t, roles...)
}
